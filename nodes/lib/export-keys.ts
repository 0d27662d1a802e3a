import type { StateStoreClient } from '../../src/client'
import type { AdminChannel } from '../../src/emulator/admin'
import { settleEach } from '../../src/bounded'
import { encodeKeyRecord, type KeyRecord } from '../../src/key-records'

/** Keys one export from the sidebar may hold: it is built in memory before it is sent. */
export const MAX_EXPORT_KEYS = 100_000
const IN_FLIGHT = 16

/** More keys match than one export from the sidebar takes. */
export class ExportTooLarge extends Error {}

/**
 * The keys matching a pattern with their values as an `aio-statestore export` file (NDJSON, see
 * src/key-records.ts), for the sidebar's key browser. Where the emulator's admin channel answers it
 * tells each key's expiry and persistence too; over SCAN alone a record has neither. A key deleted
 * while the export runs is left out.
 */
export async function exportKeys(client: StateStoreClient, admin: AdminChannel | null, pattern: string): Promise<{ text: string; count: number }> {
  const lines: string[] = []
  const add = async (keys: Buffer[], facts: (i: number) => Partial<KeyRecord>) => {
    if (lines.length + keys.length > MAX_EXPORT_KEYS) throw new ExportTooLarge()
    const values = await settleEach(keys, IN_FLIGHT, (k) => client.get(k))
    values.forEach((o, i) => {
      if (!o.ok) throw o.error
      if (o.value.value === null) return
      lines.push(encodeKeyRecord({ key: keys[i]!, value: o.value.value, ...(o.value.version ? { version: o.value.version.toString() } : {}), ...facts(i) }))
    })
  }
  if (admin) {
    for (let after: string | undefined = undefined, first = true; first || after; first = false) {
      const page = await admin.listKeys({ pattern, limit: 1000, ...(after ? { after } : {}) })
      await add(
        page.keys.map((k) => Buffer.from(k.keyHex, 'hex')),
        (i) => ({ ...(page.keys[i]!.expiresAt ? { expiresAt: page.keys[i]!.expiresAt! } : {}), ...(page.keys[i]!.persisted ? { persist: true } : {}) }),
      )
      after = page.next ?? undefined
    }
  } else {
    for await (const page of client.scan(pattern)) await add(page.map((k) => Buffer.from(k, 'utf8')), () => ({}))
  }
  return { text: lines.join(''), count: lines.length }
}
