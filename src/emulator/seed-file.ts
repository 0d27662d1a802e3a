import { readFileSync } from 'node:fs'
import { KeyRecordError, keyRecords, type KeyRecord } from '../formats/key-records'
import type { Keyspace, QuotaLimit, QuotaRefusal } from './core/keyspace'
import { describeQuota } from './core/refusals'

/**
 * The keys a `--seed` file puts into the emulator at start: a WASM graph development environment's
 * statestore.json or an `aio-statestore export` file (src/formats/key-records.ts). A file that cannot be
 * read stops the start with the file, the line and the reason. The file is checked whole now and
 * its records made again one at a time as they are written, so that no more than one is held.
 */
export function readSeedFile(file: string): Iterable<KeyRecord> {
  let content: Buffer
  try {
    content = readFileSync(file)
  } catch (err) {
    throw new Error(`seed: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      cause: err,
    })
  }
  try {
    // A checking pass that keeps nothing.
    for (const record of keyRecords(content)) void record
  } catch (err) {
    if (err instanceof KeyRecordError) throw new Error(`seed: ${file}:${err.line}: ${err.reason}`, { cause: err })
    throw err
  }
  return { [Symbol.iterator]: () => keyRecords(content) }
}

export interface Seeded {
  written: number
  /** Keys that exist already (restored from the persistence file): a seed never overwrites them. */
  existing: number
  /** Records whose expiry has passed. */
  expired: number
  /** Refused by a bound of the store, by which (each with its first refusal). */
  refused: Array<{ limit: QuotaLimit; count: number; first: QuotaRefusal }>
}

/** The refusals in words: each bound by its flag, with how many keys it refused and why the first. */
export function seedRefusals(refused: Seeded['refused']): string {
  return refused.map((r) => `${r.count} key(s) refused (${describeQuota(r.first)})`).join(', ')
}

/** Writes the records whose keys do not exist yet, as a SET NX with their expiry and persistence would. */
export function applySeed(store: Keyspace, records: Iterable<KeyRecord>, now = Date.now()): Seeded {
  const seeded: Seeded = { written: 0, existing: 0, expired: 0, refused: [] }
  for (const r of records) {
    const expiryMs = r.expiresAt === undefined ? undefined : r.expiresAt - now
    if (expiryMs !== undefined && expiryMs <= 0) {
      seeded.expired++
      continue
    }
    const outcome = store.set(r.key, r.value, {
      condition: 'NX',
      ...(expiryMs !== undefined ? { expiryMs } : {}),
      persist: r.persist === true,
    })
    if (outcome.kind === 'applied') seeded.written++
    else if (outcome.kind === 'notApplied') seeded.existing++
    else if (outcome.quota) {
      const by = seeded.refused.find((r) => r.limit === outcome.quota!.limit)
      if (by) by.count++
      else seeded.refused.push({ limit: outcome.quota.limit, count: 1, first: outcome.quota })
    } else throw new Error(`seed: a SET NX into an empty store was refused: ${outcome.code}`)
  }
  return seeded
}
