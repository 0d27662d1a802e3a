import type { Observation } from '../client'
import { Hlc } from '../hlc'
import type { WriteQueue } from './write-queue'

/**
 * What the cache knows of a key against the service:
 *
 *   unknown ──a read, a notification or our write, with a version──► known
 *   known   ──a newer read, notification or write──► known; one without a version ──► unknown
 *   any     ──a write of ours failed──► doubt ──the service's next word, whatever its version──► known | unknown
 *
 * In `doubt` the service may or may not hold what the cache holds (a timed-out write may have been
 * executed), so the key is read again until it settles. `exists` null in `known`: whether the key
 * exists at `version` is not known (a delete of nothing answers without a version).
 */
export type Knowledge =
  | { readonly kind: 'unknown' }
  | { readonly kind: 'doubt' }
  | { readonly kind: 'known'; readonly version: Hlc; readonly exists: boolean | null }

export const UNKNOWN: Knowledge = { kind: 'unknown' }
export const DOUBT: Knowledge = { kind: 'doubt' }

/** A change by someone else, as a notification brought it. */
export interface Remote {
  bytes: Buffer | null
  version: Hlc | null
}

/**
 * One cached key. Three parts, each its own small machine:
 * - `registration`: none → registering → watching (its KEYNOTIFY answered: every later change by
 *   anyone reaches the cache); a failed registration goes back to none;
 * - `knowledge` (above);
 * - `writes`: idle or busy (WriteQueue). While busy, notifications are not applied (the write in
 *   flight is newer than what the cache held); the newest waits in `held` and is applied when the
 *   queue runs dry, if it is newer than what the writes left.
 * `seen` counts notifications, so a read answered after one is dropped.
 */
export interface KeyEntry {
  readonly scope: string
  readonly top: string
  readonly serviceKey: string
  registration:
    | { readonly kind: 'none' }
    | { readonly kind: 'registering' | 'watching'; readonly observed: Promise<Observation | null> }
  knowledge: Knowledge
  writes: WriteQueue | null
  held: Remote | null
  seen: number
  /** The reads after a failed write, while they run (one at a time). */
  rereading: Promise<void> | null
}

export function newEntry(scope: string, top: string, serviceKey: string): KeyEntry {
  return {
    scope,
    top,
    serviceKey,
    registration: { kind: 'none' },
    knowledge: UNKNOWN,
    writes: null,
    held: null,
    seen: 0,
    rereading: null,
  }
}

export function versionOf(k: Knowledge): Hlc | null {
  return k.kind === 'known' ? k.version : null
}

export function writing(entry: KeyEntry): boolean {
  return entry.writes?.busy ?? false
}

/**
 * What the service said (a read or a notification) as the cache's next knowledge, or null when
 * the cache already holds something newer (or, for a value, the same version: our own write's
 * notification).
 */
export function afterService(k: Knowledge, bytes: Buffer | null, version: Hlc | null): Knowledge | null {
  const held = versionOf(k)
  if (version && held) {
    const order = Hlc.compare(version, held)
    if (order < 0 || (order === 0 && bytes !== null)) return null
  }
  return version ? { kind: 'known', version, exists: bytes !== null } : UNKNOWN
}

/** After our write was answered with `version` (null: a delete of nothing). */
export function afterWrite(k: Knowledge, exists: boolean, version: Hlc | null): Knowledge {
  const held = versionOf(k)
  if (version && (!held || Hlc.compare(version, held) > 0)) return { kind: 'known', version, exists }
  return held ? { kind: 'known', version: held, exists: null } : UNKNOWN
}

/** `a` is newer than `b` (a missing version counts as newer: it cannot be ordered, so it is taken). */
export function newer(a: Hlc | null, b: Hlc | null): boolean {
  return !a || !b || Hlc.compare(a, b) > 0
}
