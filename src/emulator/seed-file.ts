import { readFileSync } from 'node:fs'
import { KeyRecordError, parseKeyRecords, type KeyRecord } from '../key-records'
import type { Keyspace } from './core/keyspace'

/**
 * The keys a `--seed` file puts into the emulator at start: a WASM graph development environment's
 * statestore.json or an `aio-statestore export` file (src/key-records.ts). A file that cannot be
 * read stops the start with the file, the line and the reason.
 */
export function readSeedFile(file: string): KeyRecord[] {
  let content: Buffer
  try {
    content = readFileSync(file)
  } catch (err) {
    throw new Error(`seed: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err })
  }
  try {
    return parseKeyRecords(content)
  } catch (err) {
    if (err instanceof KeyRecordError) throw new Error(`seed: ${file}:${err.line}: ${err.reason}`, { cause: err })
    throw err
  }
}

export interface Seeded {
  written: number
  /** Keys that exist already (restored from the persistence file): a seed never overwrites them. */
  existing: number
  /** Records whose expiry has passed. */
  expired: number
  /** Refused by the store (the key quota). */
  refused: number
}

/** Writes the records whose keys do not exist yet, as a SET NX with their expiry and persistence would. */
export function applySeed(store: Keyspace, records: readonly KeyRecord[], now = Date.now()): Seeded {
  const seeded: Seeded = { written: 0, existing: 0, expired: 0, refused: 0 }
  for (const r of records) {
    const expiryMs = r.expiresAt === undefined ? undefined : r.expiresAt - now
    if (expiryMs !== undefined && expiryMs <= 0) {
      seeded.expired++
      continue
    }
    const outcome = store.set(r.key, r.value, { condition: 'NX', ...(expiryMs !== undefined ? { expiryMs } : {}), persist: r.persist === true })
    if (outcome.kind === 'applied') seeded.written++
    else if (outcome.kind === 'not-applied') seeded.existing++
    else seeded.refused++
  }
  return seeded
}
