import { settleEach } from './bounded'
import type { StateStoreClient } from './client'
import type { AdminChannel } from './emulator/admin'
import type { KeyRecord } from './key-records'

/** GETs of one page kept in flight at once. */
const IN_FLIGHT = 16

/** A key of the walk that could not be read; the others are exported all the same. */
export interface UnreadKey {
  key: Buffer
  error: unknown
}

/**
 * The keys matching a pattern with their values, a page at a time (what `aio-statestore export` and
 * the sidebar's export write). With an emulator's admin channel the pages come from it and tell each
 * key's expiry and persistence; otherwise SCAN lists them (the protocol tells neither). Values are
 * read with GET, a bound in flight; a key gone before its read is left out.
 */
export async function* exportPages(
  client: StateStoreClient,
  admin: AdminChannel | null,
  pattern: string,
  signal?: AbortSignal,
): AsyncGenerator<{ records: KeyRecord[]; unread: UnreadKey[] }> {
  const read = async (keys: Buffer[], facts: (i: number) => Partial<KeyRecord>) => {
    const outcomes = await settleEach(keys, IN_FLIGHT, (k) => client.get(k, signal ? { signal } : {}))
    const records: KeyRecord[] = []
    const unread: UnreadKey[] = []
    outcomes.forEach((o, i) => {
      if (!o.ok) unread.push({ key: keys[i]!, error: o.error })
      else if (o.value.value !== null)
        records.push({ key: keys[i]!, value: o.value.value, ...(o.value.version ? { version: o.value.version.toString() } : {}), ...facts(i) })
    })
    return { records, unread }
  }
  if (admin) {
    let after: string | undefined
    do {
      const page = await admin.listKeys({ pattern, limit: 1000, ...(after ? { after } : {}), ...(signal ? { signal } : {}) })
      yield await read(
        page.keys.map((k) => Buffer.from(k.keyHex, 'hex')),
        (i) => {
          const entry = page.keys[i]!
          return { ...(entry.expiresAt ? { expiresAt: entry.expiresAt } : {}), ...(entry.persisted ? { persist: true } : {}) }
        },
      )
      after = page.next ?? undefined
    } while (after)
  } else {
    for await (const page of client.scan(pattern, signal ? { signal } : {}))
      yield await read(
        page.map((k) => Buffer.from(k, 'utf8')),
        () => ({}),
      )
  }
}
