import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Pki {
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
  clientKey: Buffer
}

function run(dir: string, command: string, args: string[]): void {
  const r = spawnSync(command, args, { cwd: dir, encoding: 'utf8' })
  if (r.error || r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${r.error?.message ?? r.stderr}`)
}

/** A throw-away CA with a server certificate for 127.0.0.1 (and localhost) and a client certificate; plus an unrelated CA. */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'security-pki-'))
  const f = (name: string) => join(dir, name)
  const openssl = (...args: string[]) => run(dir, 'openssl', args)
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=reliability-test-ca')
  openssl('req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '2', '-subj', '/CN=someone-else')
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1')
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext')
  openssl('req', ...ec, '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=reliability-client')
  openssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '2')
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
  }
}

/** A mosquitto password file made with mosquitto_passwd, as an administrator would. */
export function passwordFile(dir: string, users: Record<string, string>): string {
  const file = join(dir, 'passwd')
  let first = true
  for (const [user, password] of Object.entries(users)) {
    run(dir, 'mosquitto_passwd', ['-b', ...(first ? ['-c'] : []), file, user, password])
    first = false
  }
  // mosquitto started as root drops to its own user, which must be able to read it.
  chmodSync(dir, 0o755)
  chmodSync(file, 0o644)
  return file
}

/** A Node-RED core node module, for node-red-node-test-helper (which preloads only catch, status and complete). */
export function coreNode(path: string): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(require.resolve(`@node-red/nodes/core/${path}`, { paths: [require.resolve('node-red')] }))
}
