import { defaultClientId, readAioEnvironment, type ClientOptions } from '../../src/client'

/** The credentials a config node holds (and the Test connection dialog sends). */
export interface StoreCredentials {
  username?: string | undefined
  password?: string | undefined
  satTokenFile?: string | undefined
}

export interface TlsConfigNode {
  addTLSOptions(options: Record<string, unknown>): void
}

/** The environment variable `npm start` (scripts/start.mjs) sets to its broker's URL; its seeded flows name it too. */
export const START_BROKER_ENV = 'AIO_STATESTORE_URL'

/**
 * Where a config node connects when its Broker URL is blank: AIO_STATESTORE_URL (npm start's broker
 * under npm start), else the AIO SDKs' AIO_BROKER_HOSTNAME with its port and TLS, else a broker on
 * this machine. A wrong variable is reported where the connection is made (nodes/config/environment.ts).
 */
export function defaultBrokerUrl(): string {
  try {
    return readAioEnvironment().brokerUrl ?? 'mqtt://127.0.0.1:1883'
  } catch {
    return 'mqtt://127.0.0.1:1883'
  }
}

/** A config node's client id when its field is blank: unique per runtime and config node, the same after a restart. */
export function configClientId(userDir: string | undefined, nodeId: string): string {
  return defaultClientId(userDir ?? process.cwd(), nodeId)
}

/**
 * The credentials and TLS settings of a connection, as the deployed config node and the dialog's
 * Test connection both give them to the client: one place, so a test connects as the node would.
 */
export function authOptions(
  creds: StoreCredentials,
  tlsNode: TlsConfigNode | null,
): Pick<ClientOptions, 'username' | 'password' | 'satTokenFile' | 'tls'> {
  const opts: Pick<ClientOptions, 'username' | 'password' | 'satTokenFile' | 'tls'> = {}
  if (creds.username) opts.username = creds.username
  if (creds.password) opts.password = creds.password
  if (creds.satTokenFile) opts.satTokenFile = creds.satTokenFile
  if (tlsNode) {
    const tls: Record<string, unknown> = {}
    tlsNode.addTLSOptions(tls)
    opts.tls = tls
  }
  return opts
}
