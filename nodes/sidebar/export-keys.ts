import { once } from 'node:events'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { StateStoreClient } from '../../src/client'
import type { AdminChannel } from '../../src/emulator/admin'
import { countKeys, exportPages } from '../../src/export/key-export'
import { encodeExportCut, encodeKeyRecord } from '../../src/formats/key-records'

/** Keys one export from the sidebar may hold unless settings.js says otherwise (`aioStateStore.exportMaxKeys`). */
export const MAX_EXPORT_KEYS = 100_000
/** Bytes one export from the sidebar may write unless settings.js says otherwise (`aioStateStore.exportMaxBytes`). */
export const MAX_EXPORT_BYTES = 64 * 1024 * 1024

/** How long an export waits for its reader to take more before it gives up its slot (`aioStateStore.exportIdleMs`). */
export const EXPORT_IDLE_MS = 30_000

/**
 * Values read at once: few keys, about 1 MiB where the listing tells sizes, so that no burst of answers holds the
 * runtime long.
 */
const BATCH = { keys: 4, bytes: 1024 * 1024 }

export interface ExportLimits {
  maxKeys: number
  maxBytes: number
}

/** More keys match, or more bytes, than one export from the sidebar takes: `limit` says which. */
export class ExportTooLarge extends Error {
  constructor(readonly limit: 'keys' | 'bytes') {
    super(`the export is over its ${limit} limit`)
  }
}

/**
 * Where the export goes: `write` resolves once the chunk may be followed by the next (the socket drained), or with
 * `flushed` once the chunk has left for the reader.
 */
export interface ExportSink {
  write(chunk: string, flushed?: boolean): Promise<void>
}

/**
 * The keys matching a pattern with their values as an `aio-statestore export` file, for the sidebar's
 * key browser, written to `sink` a few keys at a time (never the whole file in memory) and letting the
 * runtime's other work in between. Before writing past a limit, a file begun gets its cut line (the keys written
 * and the keys matching, so that an import refuses the file) and fails with ExportTooLarge; the count of
 * keys written otherwise.
 */
export async function streamExport(
  client: StateStoreClient,
  admin: AdminChannel | null,
  pattern: string,
  sink: ExportSink,
  limits: ExportLimits,
  signal: AbortSignal,
): Promise<number> {
  let count = 0
  let bytes = 0
  for await (const { records, unread } of exportPages(client, admin, pattern, signal, BATCH)) {
    if (unread.length > 0) throw unread[0]!.error
    for (const r of records) {
      const line = encodeKeyRecord(r)
      bytes += Buffer.byteLength(line)
      const limit = count + 1 > limits.maxKeys ? 'keys' : bytes > limits.maxBytes ? 'bytes' : null
      if (limit) {
        // A file that has begun ends in its cut line; one that has not is refused whole.
        if (count > 0) {
          const total = Math.max(await countKeys(client, admin, pattern, signal), count + 1)
          await sink.write(encodeExportCut({ written: count, total, reason: limit }), true)
        }
        throw new ExportTooLarge(limit)
      }
      count += 1
      await sink.write(line)
    }
    await nextTurn(undefined, { signal })
  }
  return count
}

/**
 * A sink over an HTTP response: headers go with the first chunk; a full socket buffer is waited out
 * for at most `idleMs`, after which the write fails: a reader who stops reading must not hold the
 * store's one export slot.
 */
export function responseSink(
  res: NodeJS.WritableStream & { headersSent: boolean },
  start: () => void,
  signal: AbortSignal,
  idleMs = EXPORT_IDLE_MS,
): ExportSink {
  return {
    async write(chunk, flushed = false) {
      if (!res.headersSent) start()
      const wait = AbortSignal.any([signal, AbortSignal.timeout(idleMs)])
      if (flushed) {
        await new Promise<void>((resolve, reject) => {
          const stop = () => reject(wait.reason as Error)
          wait.addEventListener('abort', stop, { once: true })
          res.write(chunk, () => {
            wait.removeEventListener('abort', stop)
            resolve()
          })
        })
      } else if (!res.write(chunk)) await once(res, 'drain', { signal: wait })
    },
  }
}
