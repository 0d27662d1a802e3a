import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The tests' one set of throw-away certificates, made with openssl. */
export interface TestCerts {
  dir: string
  caFile: string
  /** A CA that signed nothing the broker uses. */
  otherCaFile: string
  serverCertFile: string
  serverKeyFile: string
  clientCertFile: string
  clientKeyFile: string
  ca: Buffer
  otherCa: Buffer
  clientCert: Buffer
  /** Encrypted with `passphrase` when one was asked for. */
  clientKey: Buffer
  passphrase: string | undefined
}

export interface CertOptions {
  /** The server certificate's subjectAltName entries; default IP:127.0.0.1 and DNS:localhost. */
  serverAltNames?: string[]
  /** Encrypt the client key with this passphrase. */
  clientKeyPassphrase?: string
}

/** A CA with a server and a client certificate, plus an unrelated CA. */
export function makeCerts(options: CertOptions = {}): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'test-certs-'))
  const f = (name: string) => join(dir, name)
  const openssl = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' })
    if (r.error || r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.error?.message ?? r.stderr}`)
  }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']
  openssl('req', '-x509', ...ec, '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=test-ca')
  openssl(
    'req',
    '-x509',
    ...ec,
    '-nodes',
    '-keyout',
    'other-ca.key',
    '-out',
    'other-ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=someone-else',
  )
  const altNames = options.serverAltNames ?? ['IP:127.0.0.1', 'DNS:localhost']
  writeFileSync(f('server.ext'), `subjectAltName=${altNames.join(',')}\n`)
  openssl('req', ...ec, '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=test-server')
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  )
  const passphrase = options.clientKeyPassphrase
  const keyProtection = passphrase === undefined ? ['-nodes'] : ['-passout', `pass:${passphrase}`]
  openssl('req', ...ec, ...keyProtection, '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=test-client')
  openssl(
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'client.crt',
    '-days',
    '2',
  )
  // mosquitto started as root drops to its own user, which must be able to read these throw-away files.
  chmodSync(dir, 0o755)
  for (const name of readdirSync(dir)) chmodSync(f(name), 0o644)
  return {
    dir,
    caFile: f('ca.crt'),
    otherCaFile: f('other-ca.crt'),
    serverCertFile: f('server.crt'),
    serverKeyFile: f('server.key'),
    clientCertFile: f('client.crt'),
    clientKeyFile: f('client.key'),
    ca: readFileSync(f('ca.crt')),
    otherCa: readFileSync(f('other-ca.crt')),
    clientCert: readFileSync(f('client.crt')),
    clientKey: readFileSync(f('client.key')),
    passphrase,
  }
}

/** mosquitto.conf lines for a TLS listener on 127.0.0.1 serving `certs`' server certificate (add per-listener options after them). */
export function tlsListener(port: number, certs: TestCerts): string[] {
  return [
    `listener ${port} 127.0.0.1`,
    `cafile ${certs.caFile}`,
    `certfile ${certs.serverCertFile}`,
    `keyfile ${certs.serverKeyFile}`,
  ]
}
