import { settleEach } from '../lang/bounded'
import type { StateStoreClient } from '../client'
import type { AdminChannel } from '../emulator/admin'
import type { KeyRecord } from '../formats/key-records'

/** GETs of one page kept in flight at once. */
const IN_FLIGHT = 16

/** How many keys one batch reads at once (default 16), and, where the listing tells sizes, how many bytes of values. */
export interface ExportBatch {
  keys?: number
  bytes?: number
}

/** A key of the walk that could not be read; the others are exported all the same. */
export interface UnreadKey {
  key: Buffer
  error: unknown
}

/**
 * The keys matching a pattern with their values, a batch at a time (`batch`; what
 * `aio-statestore export` and the sidebar's export write), so that no more values than that are held
 * at once. With an emulator's admin channel the listing comes from it and tells each key's expiry and
 * persistence; otherwise SCAN lists them (the protocol tells neither). Values are read with GET; a key
 * gone before its read is left out.
 */
export async function* exportPages(
  client: StateStoreClient,
  admin: AdminChannel | null,
  pattern: string,
  signal?: AbortSignal,
  batch: ExportBatch = {},
): AsyncGenerator<{ records: KeyRecord[]; unread: UnreadKey[] }> {
  const inFlight = batch.keys ?? IN_FLIGHT
  const batchBytes = batch.bytes ?? Infinity
  const read = async (keys: Buffer[], facts: (i: number) => Partial<KeyRecord>) => {
    const outcomes = await settleEach(keys, IN_FLIGHT, (k) => client.get(k, signal ? { signal } : {}))
    const records: KeyRecord[] = []
    const unread: UnreadKey[] = []
    outcomes.forEach((o, i) => {
      if (!o.ok) unread.push({ key: keys[i]!, error: o.error })
      else if (o.value.value !== null)
        records.push({
          key: keys[i]!,
          value: o.value.value,
          ...(o.value.version ? { version: o.value.version.toString() } : {}),
          ...facts(i),
        })
    })
    return { records, unread }
  }
  if (admin) {
    let after: string | undefined
    do {
      const page = await admin.listKeys({
        pattern,
        limit: 1000,
        ...(after ? { after } : {}),
        ...(signal ? { signal } : {}),
      })
      for (let start = 0; start < page.keys.length;) {
        // The listing tells each value's size: a batch holds up to `bytes` of values (one key at least).
        let end = start + 1
        let bytes = page.keys[start]!.size
        while (end < page.keys.length && end - start < inFlight && bytes + page.keys[end]!.size <= batchBytes)
          bytes += page.keys[end++]!.size
        const entries = page.keys.slice(start, end)
        start = end
        yield await read(
          entries.map((k) => Buffer.from(k.keyHex, 'hex')),
          (i) => {
            const entry = entries[i]!
            return {
              ...(entry.expiresAt ? { expiresAt: entry.expiresAt } : {}),
              ...(entry.persisted ? { persist: true } : {}),
            }
          },
        )
      }
      after = page.next ?? undefined
    } while (after)
  } else {
    for await (const page of client.scan(pattern, signal ? { signal } : {}))
      for (let start = 0; start < page.length; start += inFlight)
        yield await read(
          page.slice(start, start + inFlight).map((k) => Buffer.from(k, 'utf8')),
          () => ({}),
        )
  }
}

/**
 * How many keys match a pattern, by their names alone (no values read): what an export cut at a limit
 * says it was asked for.
 */
export async function countKeys(
  client: StateStoreClient,
  admin: AdminChannel | null,
  pattern: string,
  signal?: AbortSignal,
): Promise<number> {
  let total = 0
  if (admin) {
    let after: string | undefined
    do {
      const page = await admin.listKeys({
        pattern,
        limit: 1000,
        ...(after ? { after } : {}),
        ...(signal ? { signal } : {}),
      })
      total += page.keys.length
      after = page.next ?? undefined
    } while (after)
  } else for await (const page of client.scan(pattern, signal ? { signal } : {})) total += page.length
  return total
}
