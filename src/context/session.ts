import type { StateStoreClient } from '../client'
import { encodeJson } from '../formats/value'
import type { ResolvedConfig } from './config'
import type { KeyIndex } from './key-index'
import type { Limiter } from './limiter'

/** What the parts of one store share: its settings, its connection and index once open, its request limiter. */
export interface Session {
  readonly config: ResolvedConfig
  readonly limiter: Limiter
  client: StateStoreClient | null
  index: KeyIndex | null
  closing: boolean
  /** Scopes already warned about a circular value (once each). */
  readonly warnedCircular: Set<string>
}

/** A context value as stored (JSON); undefined deletes. A circular property is left out, with one warning per scope. */
export function encode(session: Session, scope: string, value: unknown): Buffer | null {
  if (value === undefined) return null
  return encodeJson(value, () => {
    if (session.warnedCircular.has(scope)) return
    session.warnedCircular.add(scope)
    session.config.logger(
      'warn',
      `context ${scope} contains a circular reference that cannot be persisted; the property that refers back is ` +
        `left out, as localfilesystem does`,
    )
  })
}

/** As the memory store: the global context object's own methods are never listed as keys. */
export function withoutMethods(scope: string, keys: string[]): string[] {
  return scope === 'global' ? keys.filter((k) => k !== 'set' && k !== 'get' && k !== 'keys') : keys
}

/** The scopes of nodes (and flows) not in `activeNodes`: what clean() deletes; global stays. */
export function inactive(scopes: Iterable<string>, activeNodes: string[]): string[] {
  const active = new Set(activeNodes)
  return [...scopes].filter((scope) => scope !== 'global' && !active.has(scope.split(':')[0]!))
}

/** The store's client; an error naming the store once it is closed. */
export function clientOf(session: Session): StateStoreClient {
  if (!session.client) throw new Error(`state store context ${session.config.prefix}: not open`)
  return session.client
}

/** Errors name the store (its prefix), so a log line tells which context store failed; the code travels on. */
export function named(session: Session, err: unknown, what: string): Error {
  const message = err instanceof Error ? err.message : String(err)
  const error = new Error(`state store context ${session.config.prefix}: ${what}: ${message}`)
  if (err instanceof Error) {
    error.cause = err
    const code = (err as { code?: unknown }).code
    if (code !== undefined) (error as Error & { code?: unknown }).code = code
  }
  return error
}

/**
 * A write that waited in the store's queue longer than the request timeout while the connection
 * is down fails at once, as it would have had it been sent: a burst during an outage is reported
 * within about one request timeout, not one timeout per queue-full.
 */
export function expiry(session: Session, client: StateStoreClient): () => Error | null {
  const { requestTimeoutMs } = session.config
  const deadline = Date.now() + requestTimeoutMs
  return () =>
    Date.now() > deadline && client.status.state !== 'connected'
      ? new Error(`not connected (${client.status.reason ?? client.status.state}) for ${requestTimeoutMs} ms`)
      : null
}

export function serviceKey(session: Session, scope: string, top: string): string {
  return `${session.config.prefix}${scope}/${top}`
}
