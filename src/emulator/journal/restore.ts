import { Hlc, HlcError, type HybridLogicalClock } from '../../hlc'
import type { DedupCache } from '../core/dedup'
import type { Keyspace, KeyChange } from '../core/keyspace'
import type { OutgoingNotification, Registrations } from '../core/registrations'
import { RequestPrint } from '../core/request-print'
import type { FilteredLogger } from '../logger'
import type { Replayed } from './format'

/**
 * After a restart with `--persist`, tells each restored KEYNOTIFY registration its key's current
 * state: a SET with the key's value and version, or a DELETE for a key that is gone. A client that
 * stayed connected to an external broker cannot tell that the emulator restarted, and a change the
 * previous process had written to the file may have lost its notifications with the process (killed
 * between writing and syncing the record, before publishing): without this, such a watcher would
 * hold the old value until the key changed again. The same goes for in-memory keys, gone with
 * the process. A watcher that missed nothing hears its last notification once more (same version).
 * The embedded broker has no such clients: its registrations are dropped at start.
 */
export function tellRestoredWatchers(
  store: Keyspace,
  registrations: Registrations,
  clock: HybridLogicalClock,
  notify: (n: OutgoingNotification) => void,
  log: FilteredLogger,
): void {
  if (registrations.size === 0) return
  const goneAt = clock.tick()
  let sent = 0
  for (const key of registrations.keys()) {
    const record = store.get(key)
    const change: KeyChange = record
      ? { kind: 'set', key, value: record.value, record, wasPersisted: record.persisted }
      : { kind: 'delete', key, version: goneAt, cause: 'del', wasPersisted: false }
    for (const n of registrations.notificationsFor(change)) {
      notify(n)
      sent++
    }
  }
  log('info', `persistence: ${sent} restored KEYNOTIFY registration(s) told their key's current state`)
}

function parsedOrNull(text: string): Hlc | null {
  try {
    return Hlc.parse(text)
  } catch {
    return null
  }
}

/**
 * Puts the journal's records back into the keyspace, the registrations and the dedup cache, and moves the clock past
 * the newest version.
 */
export function replayJournal(
  store: Keyspace,
  registrations: Registrations,
  clock: HybridLogicalClock,
  dedup: DedupCache,
  records: Replayed[],
  log: FilteredLogger,
): void {
  const now = Date.now()
  let newest: Hlc | null = null
  for (const r of records) {
    switch (r.type) {
      case 'set':
        store.load(r.key, r.record)
        if (!newest || Hlc.compare(r.record.version, newest) > 0) newest = r.record.version
        break
      case 'delete':
        store.unload(r.key)
        break
      case 'keynotify':
        registrations.register(r.clientId, r.key)
        break
      case 'keynotifyStop':
        registrations.unregister(r.clientId, r.key)
        break
      case 'dropClient':
        registrations.dropClient(r.clientId)
        break
      case 'answer': {
        dedup.restore(
          r.id,
          RequestPrint.parse(r.request),
          r.expiresAt,
          { payload: r.payload, timestamp: r.timestamp },
          now,
        )
        // A deletion's record has no version, its answer does: the clock must not restart below it
        // either, or a watcher that saw the DELETE would take later writes for older ones.
        const answered = r.timestamp === undefined ? null : parsedOrNull(r.timestamp)
        if (answered && (!newest || Hlc.compare(answered, newest) > 0)) newest = answered
        break
      }
    }
  }
  if (!newest) return
  // Versions must keep increasing across restarts. update() ignores readings from its own node id,
  // so the newest stored version is presented as another node's.
  try {
    clock.update(new Hlc(newest.timestamp, newest.counter, `${clock.nodeId}-restored`))
  } catch (err) {
    if (!(err instanceof HlcError)) throw err
    log(
      'warn',
      `persistence: the newest stored version ${newest} is ahead of this machine's clock (${err.message}); new ` +
        `versions may not exceed it`,
    )
  }
}
