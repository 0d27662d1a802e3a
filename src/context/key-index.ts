// The package's public API (src/index): the lock lives wherever the client's public API puts it.
import { type Observation, type StateStoreClient } from '../client'
import { Lock } from '../locks'
import type { ResolvedConfig } from './config'
import type { Limiter } from './limiter'

/** Scope → its top-level keys. */
export type IndexState = Map<string, Set<string>>

const RETRY_MS = 1000

/**
 * The list of keys per scope, because the service has no key listing. One index key,
 * `<prefix>#keys`, holds `{"<scope>": ["<key>", …]}`. Every change to it is made under a lock
 * (`<prefix>#lock`, a lease with a fencing token, and the index is written fenced with that token):
 * read the index, then for every key in the batch read the key itself and make the index say
 * whether it exists. So the index is recomputed from the keys, not from what a runtime believes,
 * and two runtimes updating it at once serialise on the lock instead of overwriting each other.
 * A runtime asks for a check whenever its own write changes whether a key exists and the index
 * it last saw disagrees, and whenever a changed index disagrees with what its cache holds: so a
 * write that raced a concurrent delete is put back. Checks wait in a batch, so a burst of new keys
 * costs one lock round, not one each.
 */
export class KeyIndex {
  readonly indexKey: string
  private readonly lock: Lock
  current: IndexState = new Map()
  private readonly pending = new Map<string, { scope: string; top: string }>()
  private running: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null
  private scheduled = false
  private observation: Observation | null = null
  private closing = false

  constructor(
    private readonly client: StateStoreClient,
    private readonly config: ResolvedConfig,
    private readonly limiter: Limiter,
    private readonly onChange: (state: IndexState) => void,
  ) {
    this.indexKey = `${config.prefix}#keys`
    this.lock = new Lock(client, `${config.prefix}#lock`)
  }

  /** Follows the index from now on (with the cache) and returns it. */
  async open(): Promise<IndexState> {
    this.observation = await this.client.observe(this.indexKey, (n) => {
      this.current = this.parse(n.operation === 'SET' ? n.value : null)
      this.onChange(this.current)
    })
    this.current = await this.read()
    return this.current
  }

  async read(): Promise<IndexState> {
    const { value } = await this.client.get(this.indexKey)
    return this.parse(value)
  }

  get busy(): boolean {
    return this.running !== null || this.pending.size > 0
  }

  /** Asks for the key's entry to be made right, unless (with the cache) the index already agrees with `exists`. */
  check(scope: string, top: string, exists: boolean): void {
    if (this.config.cache && (this.current.get(scope)?.has(top) ?? false) === exists) return
    this.pending.set(`${scope}/${top}`, { scope, top })
    if (this.running || this.timer || this.scheduled) return
    // one tick of grace gathers a burst into one batch
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      void this.flush()
    })
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    this.running ??= this.run().finally(() => {
      this.running = null
    })
    return this.running
  }

  stopping(): void {
    this.closing = true
  }

  async close(): Promise<void> {
    this.closing = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.observation?.close()
  }

  private async run(): Promise<void> {
    while (this.pending.size > 0) {
      const batch = [...this.pending.values()]
      this.pending.clear()
      try {
        await this.update(batch)
      } catch (err) {
        const keys = batch.map((b) => `${b.scope}/${b.top}`)
        const message = err instanceof Error ? err.message : String(err)
        if (this.closing || this.client.status.state === 'closed') {
          this.config.logger('error', `state store context ${this.config.prefix}: the key index could not be updated for ${keys.join(', ')}: ${message}`)
          continue
        }
        this.config.logger('warn', `state store context ${this.config.prefix}: updating the key index failed (${message}); retrying`)
        for (const b of batch) if (!this.pending.has(`${b.scope}/${b.top}`)) this.pending.set(`${b.scope}/${b.top}`, b)
        this.timer = setTimeout(() => {
          this.timer = null
          void this.flush()
        }, RETRY_MS)
        return
      }
    }
  }

  private async update(batch: Array<{ scope: string; top: string }>): Promise<void> {
    const timeoutMs = this.config.requestTimeoutMs * 3
    const acquired = await this.lock.acquire({ timeoutMs })
    try {
      const { value } = await this.client.get(this.indexKey)
      const before = value?.toString('utf8') ?? null
      const state = this.parse(value)
      const found = await Promise.all(batch.map(({ scope, top }) => this.limiter.run(() => this.client.get(`${this.config.prefix}${scope}/${top}`))))
      batch.forEach(({ scope, top }, i) => {
        const tops = state.get(scope) ?? new Set<string>()
        if (found[i]!.value !== null) tops.add(top)
        else tops.delete(top)
        if (tops.size > 0) state.set(scope, tops)
        else state.delete(scope)
      })
      const after = serialize(state)
      if (after !== before) {
        const fencingToken = this.lock.lease.fencingToken ?? acquired
        if (after === null) await this.client.del(this.indexKey, { fencingToken })
        else await this.client.set(this.indexKey, after, { fencingToken, persist: this.config.persist })
      }
      if (!this.config.cache || !this.observation) this.current = state
    } finally {
      await this.lock.release().catch(() => {})
    }
  }

  private parse(value: Buffer | null): IndexState {
    const state: IndexState = new Map()
    if (value === null) return state
    try {
      const json = JSON.parse(value.toString('utf8')) as unknown
      if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('not an object')
      for (const [scope, tops] of Object.entries(json)) {
        if (Array.isArray(tops)) state.set(scope, new Set(tops.filter((t): t is string => typeof t === 'string')))
      }
    } catch (err) {
      this.config.logger('warn', `state store context ${this.config.prefix}: the key index ${this.indexKey} is not valid JSON (${(err as Error).message}); treating it as empty`)
    }
    return state
  }
}

function serialize(state: IndexState): string | null {
  if (state.size === 0) return null
  const out: Record<string, string[]> = {}
  for (const scope of [...state.keys()].sort()) out[scope] = [...state.get(scope)!].sort()
  return JSON.stringify(out)
}
