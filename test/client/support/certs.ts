import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestCerts {
  dir: string
  caFile: string
  serverCertFile: string
  serverKeyFile: string
  ca: Buffer
  clientCert: Buffer
  /** Encrypted with `passphrase`. */
  clientKey: Buffer
  passphrase: string
}

/** A throw-away CA, a server certificate for DNS name `localhost` only, and a client certificate with an encrypted key. */
export function makeCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'client-tls-'))
  const f = (name: string) => join(dir, name)
  const run = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`)
  }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']
  run('req', '-x509', ...ec, '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=client-test-ca')
  writeFileSync(f('server.ext'), 'subjectAltName=DNS:localhost\n')
  run('req', ...ec, '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext')
  const passphrase = 'client-key-secret'
  run('req', ...ec, '-keyout', 'client.key', '-passout', `pass:${passphrase}`, '-out', 'client.csr', '-subj', '/CN=test-client')
  run('x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '2')
  // mosquitto started as root drops to its own user, which must be able to read these throw-away files.
  chmodSync(dir, 0o755)
  for (const name of readdirSync(dir)) chmodSync(f(name), 0o644)
  return {
    dir,
    caFile: f('ca.crt'),
    serverCertFile: f('server.crt'),
    serverKeyFile: f('server.key'),
    ca: readFileSync(f('ca.crt')),
    clientCert: readFileSync(f('client.crt')),
    clientKey: readFileSync(f('client.key')),
    passphrase,
  }
}
