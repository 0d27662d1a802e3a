import { defaultClientId, type ClientOptions } from '../../src/client'

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
 * Where a config node connects when its Broker URL is blank: `npm start`'s broker when Node-RED
 * runs under it (or whatever AIO_STATESTORE_URL says), else a broker on this machine.
 */
export function defaultBrokerUrl(): string {
  return process.env[START_BROKER_ENV] || 'mqtt://127.0.0.1:1883'
}

/** A config node's client id when its field is blank: unique per runtime and config node, the same after a restart. */
export function configClientId(userDir: string | undefined, nodeId: string): string {
  return defaultClientId(userDir ?? process.cwd(), nodeId)
}

/**
 * The credentials and TLS settings of a connection, as the deployed config node and the dialog's
 * Test connection both give them to the client: one place, so a test connects as the node would.
 */
export function authOptions(creds: StoreCredentials, tlsNode: TlsConfigNode | null): Pick<ClientOptions, 'username' | 'password' | 'satTokenFile' | 'tls'> {
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
