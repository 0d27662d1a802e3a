import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'

/**
 * The AIO SDKs' development layout, laid out in a folder for the emulator to serve (`--dev DIR`):
 * a CA, a certificate for localhost, a client certificate and a service account token in
 * `DIR/.session` (the SDKs' names: broker-ca.crt, client.crt, client.key, token.txt), and `DIR/.env`
 * with the `AIO_*` lines of the TLS + SAT listener, the cluster's default. Files already there are
 * kept, so a restart serves the same CA. The certificates are made with openssl.
 */
export interface DevLayout {
  dir: string
  session: string
  caFile: string
  /** The broker's own certificate and key (not the SDKs' files: in DIR/.broker). */
  brokerCertFile: string
  brokerKeyFile: string
  clientCertFile: string
  clientKeyFile: string
  tokenFile: string
  envFile: string
}

/** The SDKs' development ports: plain, TLS + X.509, TLS + SAT. */
export const DEV_PORTS = { plain: 1883, x509: 8883, sat: 8884 } as const

/** The subject of the client certificate `--dev` makes, for X.509 authorization attributes. */
export const DEV_CLIENT_SUBJECT = 'CN = aio-statestore-dev-client'

export function devLayout(dir: string): DevLayout {
  const root = resolve(dir)
  const session = join(root, '.session')
  const broker = join(root, '.broker')
  return {
    dir: root,
    session,
    caFile: join(session, 'broker-ca.crt'),
    brokerCertFile: join(broker, 'broker.crt'),
    brokerKeyFile: join(broker, 'broker.key'),
    clientCertFile: join(session, 'client.crt'),
    clientKeyFile: join(session, 'client.key'),
    tokenFile: join(session, 'token.txt'),
    envFile: join(root, '.env'),
  }
}

/**
 * Files and folders of the layout that others than their owner may write: whoever can write the
 * token file chooses the token the SAT listener accepts, whoever can write `.session` can swap it,
 * and anyone who can write the folder itself (world-writable, sticky or not; a group's write, as
 * user private groups give, is left) can put a `.session` of their own there.
 */
export function writableByOthers(layout: DevLayout): string[] {
  const found: string[] = []
  for (const path of [layout.session, layout.tokenFile, layout.caFile, layout.clientCertFile, layout.clientKeyFile]) {
    let mode: number
    try {
      mode = statSync(path).mode
    } catch {
      continue
    }
    if ((mode & 0o022) !== 0) found.push(shownMode(path, mode))
  }
  try {
    const mode = statSync(layout.dir).mode
    if ((mode & 0o002) !== 0) found.unshift(shownMode(layout.dir, mode))
  } catch {
    // Not there yet: made below, 0700.
  }
  return found
}

function shownMode(path: string, mode: number): string {
  return `${path} (mode ${(mode & 0o777).toString(8).padStart(3, '0')})`
}

/**
 * Creates what is missing of the layout (not `.env`: see writeDevEnv). Throws with openssl's words
 * when it fails, and when a file already there may be written by others (writableByOthers).
 * `undo()` removes what this call created, for a start that fails after it.
 */
export function prepareDevLayout(dir: string): DevLayout & { undo(): void } {
  const layout = devLayout(dir)
  const loose = writableByOthers(layout)
  if (loose.length > 0)
    throw new Error(
      `refusing files that others may write (chmod go-w, or remove them to have them made anew): ${loose.join(', ')}`,
    )
  const broker = join(layout.dir, '.broker')
  // The first of the layout's folders that does not exist yet: removing it undoes all that is made below it.
  const created = [layout.dir, layout.session, broker].filter((path) => !existsSync(path))
  const undo = () => {
    for (const path of created) rmSync(path, { recursive: true, force: true })
  }
  mkdirSync(layout.session, { recursive: true, mode: 0o700 })
  mkdirSync(broker, { recursive: true, mode: 0o700 })
  const caKey = join(broker, 'ca.key')
  const openssl = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: broker, encoding: 'utf8' })
    if (r.error) throw new Error(`--dev needs openssl to make its certificates: ${r.error.message}`)
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.trim()}`)
  }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  if (!existsSync(layout.caFile) || !existsSync(caKey)) {
    openssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      caKey,
      '-out',
      layout.caFile,
      '-days',
      '365',
      '-subj',
      '/CN=aio-statestore-dev-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    )
  }
  const sign = (name: string, subject: string, certFile: string, keyFile: string, extensions: string) => {
    if (existsSync(certFile) && existsSync(keyFile)) return
    const csr = join(broker, `${name}.csr`)
    const ext = join(broker, `${name}.ext`)
    writeFileSync(ext, extensions)
    openssl('req', ...ec, '-keyout', keyFile, '-out', csr, '-subj', subject)
    openssl(
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      layout.caFile,
      '-CAkey',
      caKey,
      '-CAserial',
      join(broker, 'ca.srl'),
      '-CAcreateserial',
      '-out',
      certFile,
      '-days',
      '365',
      '-extfile',
      ext,
    )
  }
  sign(
    'broker',
    '/CN=localhost',
    layout.brokerCertFile,
    layout.brokerKeyFile,
    'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n',
  )
  sign(
    'client',
    '/CN=aio-statestore-dev-client',
    layout.clientCertFile,
    layout.clientKeyFile,
    'extendedKeyUsage=clientAuth\n',
  )
  // A stand-in for a projected service account token: the SAT listener accepts what this file holds.
  if (!existsSync(layout.tokenFile))
    writeFileSync(layout.tokenFile, `dev.${randomBytes(24).toString('base64url')}\n`, { mode: 0o600 })
  return { ...layout, undo }
}

/**
 * Writes `DIR/.env`: the AIO_* lines of the TLS + SAT listener on `satPort`, once it listens.
 * Returns those settings, for a caller that also takes them into its own environment.
 */
export function writeDevEnv(layout: DevLayout, satPort: number): Record<string, string> {
  const settings: Record<string, string> = {
    AIO_BROKER_HOSTNAME: 'localhost',
    AIO_BROKER_TCP_PORT: String(satPort),
    AIO_MQTT_USE_TLS: 'true',
    AIO_TLS_CA_FILE: layout.caFile,
    AIO_SAT_FILE: layout.tokenFile,
  }
  writeFileSync(
    layout.envFile,
    [
      "# The AIO SDKs' connection settings for the emulator's TLS + SAT listener (aio-statestore-emulator --dev).",
      '# Export them (set -a; . ./.env; set +a) and the SDK samples, aio-statestore and a config node with blank ' +
        'fields connect.',
      ...Object.entries(settings).map(([name, value]) => `${name}=${value}`),
      '',
    ].join('\n'),
  )
  return settings
}
