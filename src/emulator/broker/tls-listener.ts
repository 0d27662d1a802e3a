import { readFileSync } from 'node:fs'
import { createServer, type Server, type TLSSocket } from 'node:tls'
import type { ListenerAuthentication } from './authentication'
import { DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS } from './connection-limits'

/**
 * A TLS listener of the embedded broker, as a BrokerListener port: its certificate, and how its clients authenticate.
 */
export interface TlsListenerOptions {
  /** Default: the broker's host. */
  host?: string
  /** 0 picks a free port. */
  port: number
  /** PEM files: the server certificate (with its chain) and its key. */
  certFile: string
  keyFile: string
  /** PEM file of the CA client certificates must be signed by: required for `x509`. */
  clientCaFile?: string
  authentication: ListenerAuthentication
}

export interface RunningTlsListener {
  readonly port: number
  readonly host: string
  readonly options: TlsListenerOptions
  readonly server: Server
}

/**
 * Starts a TLS server whose every authenticated socket (TCP_NODELAY on) goes to `handle`. An X.509
 * listener asks for a client certificate and refuses, in the handshake, one its CA did not sign.
 */
export async function startTlsListener(
  options: TlsListenerOptions,
  defaultHost: string,
  handle: (socket: TLSSocket) => void,
  onError: (err: Error) => void,
  handshakeTimeoutMs = DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS,
): Promise<RunningTlsListener> {
  const read = (what: string, file: string) => {
    try {
      return readFileSync(file)
    } catch (err) {
      throw new Error(
        `TLS listener on port ${options.port}: cannot read the ${what} ${file}: ` +
          `${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { cause: err },
      )
    }
  }
  const x509 = options.authentication.method === 'x509'
  if (x509 && !options.clientCaFile)
    throw new Error(
      `TLS listener on port ${options.port}: X.509 authentication needs the CA of the client certificates`,
    )
  const server = createServer({
    cert: read('certificate', options.certFile),
    key: read('key', options.keyFile),
    ...(options.clientCaFile ? { ca: read('client CA', options.clientCaFile) } : {}),
    requestCert: x509,
    rejectUnauthorized: x509,
    // A socket that never completes its handshake is closed after this (Node.js waits 120 s).
    handshakeTimeout: handshakeTimeoutMs,
  })
  server.on('secureConnection', (socket) => {
    socket.setNoDelay(true)
    handle(socket)
  })
  // A client's failed handshake (wrong CA, no certificate, none within the timeout) is its own
  // problem, not the broker's: its socket is closed (with a listener, Node.js leaves that to us).
  server.on('tlsClientError', (_err, socket) => socket.destroy())
  const host = options.host ?? defaultHost
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  server.on('error', onError)
  return { port: (server.address() as { port: number }).port, host, options, server }
}
