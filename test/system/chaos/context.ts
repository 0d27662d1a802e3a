/**
 * The context store workload: two cached context stores on one prefix, each through its own relay,
 * doing random set and delete (a set to undefined) on a few keys of one scope. Check, after
 * quiescence (given `settleMs` for stragglers): each cache holds what the store holds, so the two
 * caches agree with each other, and keys() agree in both and with the store's key index. "The
 * store" is an uncached context store straight on the broker: it reads through the same encoding
 * and the same index, past every relay.
 */
import { isDeepStrictEqual } from 'node:util'
import { StateStoreClient, type Observation } from '../../../src/client'
import { StateStoreContext } from '../../../src/context/state-store-context'
import { History } from './history'

const SCOPE = 'global'
const KEYS = ['a', 'b', 'c', 'd']

type Callback = (err?: Error | null, ...values: unknown[]) => void
function call<T>(fn: (cb: Callback) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, ...values) => (err ? reject(err) : resolve(values[0] as T))))
}

/** Resolves once the store has loaded its stored context (a read with a callback is answered), trying for up to a minute. */
async function loaded(store: StateStoreContext): Promise<void> {
  const deadline = performance.now() + 60_000
  for (;;) {
    try {
      await call((cb) => store.get(SCOPE, KEYS[0]!, cb))
      return
    } catch (err) {
      if (performance.now() > deadline) throw err
    }
  }
}

/** What one context store shows: a value per key, and keys(). */
export interface ContextView {
  values: ReadonlyMap<string, unknown>
  keys: readonly string[]
}

/** Each cache's values and keys() equal the store's (so the caches equal each other), and the store's key index lists the keys it holds values under. */
export function contextMismatches(store: ContextView, caches: readonly ContextView[]): string[] {
  const mismatches: string[] = []
  const sorted = (keys: readonly string[]) => [...keys].sort()
  const present = [...store.values].filter(([, v]) => v !== undefined).map(([k]) => k)
  if (!isDeepStrictEqual(sorted(store.keys), sorted(present)))
    mismatches.push(
      `the store's key index lists ${JSON.stringify(sorted(store.keys))}, its values are under ${JSON.stringify(sorted(present))}`,
    )
  caches.forEach((cache, i) => {
    for (const [key, value] of store.values) {
      const cached = cache.values.get(key)
      if (!isDeepStrictEqual(cached, value))
        mismatches.push(
          `store c${i}, key ${key}: its cache holds ${JSON.stringify(cached)}, the store ${JSON.stringify(value)}`,
        )
    }
    if (!isDeepStrictEqual(sorted(cache.keys), sorted(store.keys)))
      mismatches.push(
        `store c${i}: keys() is ${JSON.stringify(sorted(cache.keys))}, the store's ${JSON.stringify(sorted(store.keys))}`,
      )
  })
  return mismatches
}

export class ContextWorkload {
  readonly history = new History<{ key: string; value: unknown }, true>()
  private readonly stores: StateStoreContext[]
  private stopped = false
  private readonly running: Array<Promise<void>> = []
  /** Every store's log, and every value the key index's delta took as a watcher past the relays saw it: the history a violation is shown with. */
  readonly logs: Array<{ at: number; who: string; line: string }> = []
  private indexWatch: Observation | null = null

  /** `brokerUrls`: one relay per store; `prefix` unique to the round. */
  constructor(
    brokerUrls: string[],
    private readonly directUrl: string,
    private readonly prefix: string,
    private readonly clientId: (name: string) => string,
    private readonly random: () => number,
  ) {
    this.stores = brokerUrls.map(
      (broker, i) =>
        new StateStoreContext({
          broker,
          prefix,
          clientId: clientId(`c${i}`),
          requestTimeout: 2500,
          keepalive: 2,
          logger: (level, line) => this.logs.push({ at: performance.now(), who: `c${i} ${level}`, line }),
        }),
    )
  }

  /** `watcher`: a client straight on the broker, to record the index's delta as the service changed it. */
  async start(watcher?: StateStoreClient): Promise<void> {
    this.indexWatch =
      (await watcher
        ?.observe(`${this.prefix}#keys/delta`, (n) =>
          this.logs.push({
            at: performance.now(),
            who: 'index',
            line: `delta ${n.operation} ${n.value?.toString() ?? ''}`,
          }),
        )
        .catch(() => null)) ?? null
    await Promise.all(this.stores.map((s) => s.open()))
    // open() resolves even when the load has not finished (Node-RED starts regardless): the workload
    // starts once both stores have loaded, as the faults, not the start, are what is judged here
    await Promise.all(this.stores.map((s) => loaded(s)))
    this.stores.forEach((store, i) => this.running.push(this.loop(store, `c${i}`)))
  }

  /** Waits for both stores' connections to be back: they reconnect with the product's backoff (up to its maximum), not the harness clients'. */
  async reconnected(timeoutMs: number): Promise<void> {
    await Promise.all(
      this.stores.map(async (s) => {
        await (s as unknown as { session: { client: StateStoreClient | null } }).session.client?.ready({ timeoutMs })
      }),
    )
  }

  async stop(): Promise<void> {
    this.stopped = true
    await Promise.all(this.running)
  }

  private async loop(store: StateStoreContext, name: string): Promise<void> {
    let n = 0
    while (!this.stopped) {
      const key = KEYS[Math.floor(this.random() * KEYS.length)]!
      // One in four a delete: Node-RED deletes a context key by setting it to undefined.
      const value = this.random() < 0.25 ? undefined : { by: name, n: n++, tags: [Math.floor(this.random() * 100)] }
      await this.history.record(name, { key, value }, async () => {
        await call((cb) => store.set(SCOPE, key, value, cb))
        return true as const
      })
      await new Promise((r) => setTimeout(r, 10 + this.random() * 30))
    }
  }

  async check(settleMs: number): Promise<{ operations: number; violations: string[] }> {
    const truth = new StateStoreContext({
      broker: this.directUrl,
      prefix: this.prefix,
      clientId: this.clientId('truth'),
      cache: false,
      requestTimeout: 5000,
      logger: () => {},
    })
    await truth.open()
    const deadline = performance.now() + settleMs
    let mismatches: string[]
    try {
      for (;;) {
        mismatches = []
        const stored = new Map<string, unknown>()
        for (const key of KEYS) stored.set(key, await call((cb) => truth.get(SCOPE, key, cb)))
        const storedKeys = (await call<string[]>((cb) => truth.keys(SCOPE, cb))) ?? []
        const caches = this.stores.map((store) => ({
          values: new Map(KEYS.map((k) => [k, store.get(SCOPE, k)])),
          keys: store.keys(SCOPE) as string[],
        }))
        mismatches = contextMismatches({ values: stored, keys: storedKeys }, caches)
        if (mismatches.length === 0 || performance.now() > deadline) break
        await new Promise((r) => setTimeout(r, 200))
      }
    } finally {
      await truth.close()
    }
    const ops = this.history.ops
    // The history of each key in question (every key, for a wrong key list), and the index's: the stores' logs and the delta's values.
    const shown = mismatches.map((m) => {
      const key = /key (\w+):/.exec(m)?.[1]
      const last = ops.filter((o) => (key ? o.input.key === key : true)).slice(key ? -6 : -16)
      const index = this.logs
        .filter((l) => l.who === 'index' || / key index|loading|loaded/.test(l.line))
        .slice(-40)
        .map((l) => `  ${Math.round(l.at)} ${l.who}: ${l.line}`)
      return [
        m,
        ...last.map(
          (o) =>
            `  ${o.process} set ${o.input.key}=${JSON.stringify(o.input.value)} at ${Math.round(o.invokedAt)}-${Math.round(o.returnedAt)}: ${o.outcome}${o.error ? ` (${o.error})` : ''}`,
        ),
        ...(key ? [] : ['  the index and the stores, last:', ...index]),
      ].join('\n')
    })
    return { operations: ops.filter((o) => o.outcome !== 'pending').length, violations: shown }
  }

  async close(): Promise<void> {
    await this.indexWatch?.close()
    await Promise.all(this.stores.map((s) => s.close()))
  }
}
