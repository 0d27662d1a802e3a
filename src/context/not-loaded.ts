/**
 * The store has not loaded its context yet (its broker has not been reached since Node-RED
 * started, or the load is still running). A synchronous read cannot answer without risking an
 * `undefined` a flow would write back over stored data, so it throws this; an asynchronous call
 * gets it after waiting the request timeout.
 */
export class ContextNotLoadedError extends Error {
  readonly code = 'CONTEXT_NOT_LOADED'
  override readonly name = 'ContextNotLoadedError'
}

/** Why the store is not loaded: waiting for its broker, or loading (how far, when the keys are being read). */
export type NotLoadedWhy =
  | { waiting: { brokerUrl: string; reason?: string | undefined } }
  | { loading: { loaded: number; total: number } | null }

/** The text a flow's author meets (a Function node's error): what is missing, why, and what to do. */
export function notLoadedMessage(prefix: string, why: NotLoadedWhy, timeoutMs: number): string {
  const state =
    'waiting' in why
      ? `waiting for its broker ${why.waiting.brokerUrl}${why.waiting.reason ? ` (${why.waiting.reason})` : ''}`
      : why.loading
        ? `loading, ${why.loading.loaded.toLocaleString('en')} of ${why.loading.total.toLocaleString('en')} keys read`
        : 'loading'
  return (
    `state store context ${prefix}: not loaded yet: ${state}. ` +
    `Until its stored values are read, a get without a callback cannot answer (undefined could be written back over ` +
    `a stored value); ` +
    `a get with a callback waits up to ${timeoutMs} ms, and writes are held and applied once loaded`
  )
}
