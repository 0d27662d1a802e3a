/**
 * The watches workload: watchers observe the requests workload's keys. Checks: per key, the
 * versions a watcher is told never go backwards; after quiescence each watcher's last value and
 * version per key equal the store's.
 */
import type { KeyNotification, Observation, StateStoreClient } from '../../../src/client'
import { Hlc } from '../../../src/hlc'

interface Seen {
  value: string | null
  version: Hlc | null
}

export class WatchesWorkload {
  private readonly observations: Observation[] = []
  private readonly last: Array<Map<string, Seen>> = []
  readonly violations: string[] = []
  notifications = 0

  constructor(
    private readonly clients: StateStoreClient[],
    private readonly keys: string[],
  ) {}

  async start(): Promise<void> {
    for (const [i, client] of this.clients.entries()) {
      const last = new Map<string, Seen>()
      this.last.push(last)
      for (const key of this.keys) {
        this.observations.push(await client.observe(key, (n) => this.seen(i, last, key, n), { timeoutMs: 10_000 }))
      }
    }
  }

  private seen(watcher: number, last: Map<string, Seen>, key: string, n: KeyNotification): void {
    this.notifications += 1
    const before = last.get(key)
    // A DELETE has no version of its own: only versions of SETs are ordered.
    if (before?.version && n.version && Hlc.compare(n.version, before.version) < 0) {
      this.violations.push(
        `watcher ${watcher}, key ${key}: version went back from ${before.version} to ${n.version}${n.reconciled ? ' (reconciled)' : ''}`,
      )
    }
    last.set(key, {
      value: n.operation === 'SET' ? (n.value?.toString() ?? null) : null,
      version: n.operation === 'SET' ? n.version : (before?.version ?? null),
    })
  }

  /** After quiescence: every watcher's last word on each key is what the store holds (given `settleMs` for stragglers). */
  async check(reader: StateStoreClient, settleMs: number): Promise<string[]> {
    const deadline = performance.now() + settleMs
    for (;;) {
      const mismatches: string[] = []
      for (const key of this.keys) {
        const { value, version } = await reader.get(key, { timeoutMs: 5000 })
        const stored = value?.toString() ?? null
        this.last.forEach((last, watcher) => {
          const seen = last.get(key)
          const seenValue = seen?.value ?? null
          const versionDiffers =
            stored !== null && (!seen?.version || !version || Hlc.compare(seen.version, version) !== 0)
          if (seenValue !== stored || versionDiffers)
            mismatches.push(
              `watcher ${watcher}, key ${key}: last told ${JSON.stringify(seenValue)} @${seen?.version ?? '-'}, the store holds ${JSON.stringify(stored)} @${version ?? '-'}`,
            )
        })
      }
      if (mismatches.length === 0 || performance.now() > deadline) return [...this.violations, ...mismatches]
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.observations.splice(0).map((o) => o.close()))
  }
}
