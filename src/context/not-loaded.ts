/**
 * The store has not loaded its context yet (its broker has not been reached since Node-RED
 * started). A synchronous read cannot answer without risking an `undefined` a flow would write back
 * over stored data, so it throws this; an asynchronous call gets it after waiting the request timeout.
 */
export class ContextNotLoadedError extends Error {
  readonly code = 'CONTEXT_NOT_LOADED'
  override readonly name = 'ContextNotLoadedError'
}
