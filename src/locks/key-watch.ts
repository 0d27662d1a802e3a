import type { KeyNotification, Observation, RequestOptions, StateStoreClient } from '../client'

/** How long a lock name's watch stays registered after its last listener left, for the next acquisition. */
export const WATCH_KEPT_MS = 30_000

const watches = new WeakMap<StateStoreClient, Map<string, KeyWatch>>()

/**
 * One observation (KEYNOTIFY) per lock name and client, shared by the leases that follow the key
 * and the waiters that wait for its DELETE, and kept for WATCH_KEPT_MS after the last of them, so
 * that the next acquisition finds it registered: a free lock then costs its SET alone, and a
 * waiter needs no registration before it waits.
 */
export class KeyWatch {
  private readonly listeners = new Set<(n: KeyNotification) => void>()
  private observation: Promise<Observation> | null = null
  private isRegistered = false
  private kept: NodeJS.Timeout | null = null

  private constructor(
    private readonly client: StateStoreClient,
    readonly name: Buffer,
    private readonly id: string,
  ) {}

  /** The client's watch of this name (made on first use). */
  static of(client: StateStoreClient, name: Buffer): KeyWatch {
    let byName = watches.get(client)
    if (!byName) {
      byName = new Map()
      watches.set(client, byName)
    }
    const id = name.toString('hex')
    let watch = byName.get(id)
    if (!watch) {
      watch = new KeyWatch(client, Buffer.from(name), id)
      byName.set(id, watch)
    }
    return watch
  }

  /**
   * The service has our registration: every later change of the key reaches the listeners, in order (after a reconnect,
   * reconciled).
   */
  get registered(): boolean {
    return this.isRegistered
  }

  /** Hears every change of the key from now on (once registered); the returned function stops it. */
  listen(listener: (n: KeyNotification) => void): () => void {
    const own = (n: KeyNotification) => listener(n)
    this.listeners.add(own)
    if (this.kept) clearTimeout(this.kept)
    this.kept = null
    return () => {
      if (!this.listeners.delete(own) || this.listeners.size > 0) return
      this.keep()
    }
  }

  /**
   * Registers the key (once, shared) and resolves when it is; a failed registration is tried anew by
   * the next call. Resolves with the registration's read (Observation.initial) when this call made
   * it, so the read came after the call; else null.
   */
  async ready(options: RequestOptions = {}): Promise<Observation['initial']> {
    const made = !this.observation
    if (!this.observation) {
      const { timeoutMs, signal } = options
      const observation = this.client.observe(this.name, (n) => this.hear(n), {
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(signal ? { signal } : {}),
      })
      this.observation = observation
      observation.then(
        () => {
          if (this.observation === observation) this.isRegistered = true
        },
        () => {
          if (this.observation === observation) this.observation = null
        },
      )
      // Nobody may be listening by the time it is registered: then it is kept as after the last listener.
      if (this.listeners.size === 0) this.keep()
    }
    const { initial } = await this.observation
    return made ? initial : null
  }

  private hear(n: KeyNotification): void {
    for (const listener of [...this.listeners]) listener(n)
  }

  /** Unregisters after WATCH_KEPT_MS unless someone listens again; a closing client ends it at once. */
  private keep(): void {
    if (this.kept) clearTimeout(this.kept)
    this.kept = setTimeout(() => this.end(), WATCH_KEPT_MS)
    this.kept.unref()
  }

  private end(): void {
    this.kept = null
    if (this.listeners.size > 0) return
    const observation = this.observation
    this.observation = null
    this.isRegistered = false
    if (watches.get(this.client)?.get(this.id) === this) watches.get(this.client)!.delete(this.id)
    void observation?.then((o) => o.close()).catch(() => {})
  }
}
