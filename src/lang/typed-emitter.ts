import { EventEmitter } from 'node:events'

/** Maps each event name to the tuple of arguments its listeners receive. */
export type EventMap = { [event: string]: unknown[] }

/**
 * An EventEmitter whose event names and payloads are checked by the compiler. Only the typed
 * subset is exposed; `emit` stays protected so only the owner raises events.
 */
export class TypedEmitter<Events extends EventMap> {
  private readonly emitter = new EventEmitter()

  constructor() {
    // Many observers of one client (nodes, leases, locks) are normal, not a leak.
    this.emitter.setMaxListeners(0)
  }

  on<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void)
    return this
  }

  once<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    this.emitter.once(event, listener as (...args: unknown[]) => void)
    return this
  }

  off<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    this.emitter.off(event, listener as (...args: unknown[]) => void)
    return this
  }

  removeListener<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    return this.off(event, listener)
  }

  listenerCount<E extends keyof Events & string>(event: E): number {
    return this.emitter.listenerCount(event)
  }

  removeAllListeners<E extends keyof Events & string>(event?: E): this {
    if (event === undefined) this.emitter.removeAllListeners()
    else this.emitter.removeAllListeners(event)
    return this
  }

  /**
   * Raises an event. A listener that throws must not break the client's own bookkeeping, so the
   * exception goes to 'error' listeners when there are any and is otherwise dropped: an 'error'
   * event is never emitted unhandled.
   */
  protected emit<E extends keyof Events & string>(event: E, ...args: Events[E]): boolean {
    const listeners = this.emitter.listeners(event) as Array<(...a: Events[E]) => void>
    for (const listener of listeners) {
      try {
        listener(...args)
      } catch (err) {
        if (event !== 'error') this.emitError(err)
      }
    }
    return listeners.length > 0
  }

  protected emitError(err: unknown): void {
    if (this.emitter.listenerCount('error') === 0) return
    const error = err instanceof Error ? err : new Error(String(err))
    for (const listener of this.emitter.listeners('error') as Array<(e: Error) => void>) {
      try {
        listener(error)
      } catch {
        // An error listener that throws has nowhere further to report to.
      }
    }
  }
}
