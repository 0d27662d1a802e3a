import type { StateStoreClient } from '../../src/client'
import type { AdminChannel } from '../../src/emulator/admin'
import { exportPages } from '../../src/key-export'
import { encodeKeyRecord } from '../../src/key-records'

/** Keys one export from the sidebar may hold: it is built in memory before it is sent. */
export const MAX_EXPORT_KEYS = 100_000

/** More keys match than one export from the sidebar takes. */
export class ExportTooLarge extends Error {}

/** The keys matching a pattern with their values as an `aio-statestore export` file, for the sidebar's key browser. */
export async function exportKeys(client: StateStoreClient, admin: AdminChannel | null, pattern: string): Promise<{ text: string; count: number }> {
  let text = ''
  let count = 0
  for await (const { records, unread } of exportPages(client, admin, pattern)) {
    if (unread.length > 0) throw unread[0]!.error
    count += records.length
    if (count > MAX_EXPORT_KEYS) throw new ExportTooLarge()
    for (const r of records) text += encodeKeyRecord(r)
  }
  return { text, count }
}
