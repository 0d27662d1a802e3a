import type { LockRecord, WatchRecord } from './activity'
import type { ConnectionFigures } from './metrics'
import { viewValue, type ValueView } from './value'

/** The JSON a viewer gets for a watch, a lock and a connection: plain data, values as previews. */
export interface WatchView {
  key: string
  observers: number
  operation: 'SET' | 'DELETE' | null
  value: ValueView | null
  version: string | null
  at: number | null
  notifications: number
  /** How far behind the last notification arrived, ms. */
  behindMs: number | null
}

export interface LockView {
  id: string
  owner: string
  name: string
  kind: LockRecord['kind']
  holder: string
  held: boolean
  currentHolder: string | null
  fencingToken: string | null
  expiresAt: number | null
  renewals: number
  lastReason: string | null
  at: number
}

/** Characters of a value shown in a list; the key inspector shows more. */
const PREVIEW_CHARS = 512

export function watchView(w: WatchRecord): WatchView {
  return {
    key: w.key,
    observers: w.observers.size,
    operation: w.operation,
    value: w.value ? viewValue(w.value, PREVIEW_CHARS) : null,
    version: w.version,
    at: w.at,
    notifications: w.notifications,
    behindMs: w.behindMs,
  }
}

export function lockView(l: LockRecord): LockView {
  return {
    id: l.id,
    owner: l.owner,
    name: l.name,
    kind: l.kind,
    holder: l.holder,
    held: l.held,
    currentHolder: l.currentHolder ?? null,
    fencingToken: l.fencingToken,
    expiresAt: l.expiresAt,
    renewals: l.renewals,
    lastReason: l.lastReason,
    at: l.at,
  }
}

export type ConnectionView = ConnectionFigures
