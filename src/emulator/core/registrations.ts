import type { Hlc } from '../../hlc'
import { Notification, notificationTopic } from '../../protocol'
import type { KeyChange } from './keyspace'

/** A change of the registrations while serving (replay makes none), for the journal. */
export type RegistrationChange =
  /** KEYNOTIFY, or KEYNOTIFY STOP that removed a registration; a KEYNOTIFY is reported even when already registered. */
  | { kind: 'keynotify'; clientId: string; key: Buffer; stop: boolean }
  /** A client with registrations disconnected: all of them end. */
  | { kind: 'dropClient'; clientId: string }

export interface OutgoingNotification {
  clientId: string
  key: Buffer
  topic: string
  payload: Buffer
  version: Hlc
}

/**
 * KEYNOTIFY registrations per (client id, key), and the notifications a change produces for them.
 * Both directions are indexed: by key to fan a change out, by client to forget a client at once.
 */
export class Registrations {
  /**
   * key (latin1) → client id → the notification topic, in registration order. The topic (two hex
   * encodings and a concatenation) is made once at registration rather than for every notification.
   */
  private readonly byKey = new Map<string, Map<string, string>>()
  /** client id → keys (latin1). */
  private readonly byClient = new Map<string, Set<string>>()
  private onChange: (change: RegistrationChange) => void = () => {}

  /** Replaces the change listener (wired after replaying persistence, as the store's). */
  setListener(onChange: (change: RegistrationChange) => void): void {
    this.onChange = onChange
  }

  get size(): number {
    let n = 0
    for (const clients of this.byKey.values()) n += clients.size
    return n
  }

  /** The keys a client is registered for. */
  countOf(clientId: string): number {
    return this.byClient.get(clientId)?.size ?? 0
  }

  has(clientId: string, key: Buffer): boolean {
    return this.byClient.get(clientId)?.has(key.toString('latin1')) ?? false
  }

  /** Registering twice is the same as once. */
  register(clientId: string, key: Buffer): void {
    const id = key.toString('latin1')
    let clients = this.byKey.get(id)
    if (!clients) this.byKey.set(id, (clients = new Map<string, string>()))
    if (!clients.has(clientId)) clients.set(clientId, notificationTopic(clientId, key))
    add(this.byClient, clientId, id)
    this.onChange({ kind: 'keynotify', clientId, key, stop: false })
  }

  /** False when the client was not registered for the key (the service answers `:0`). */
  unregister(clientId: string, key: Buffer): boolean {
    const id = key.toString('latin1')
    const removed = remove(this.byKey, id, clientId)
    if (removed) {
      remove(this.byClient, clientId, id)
      this.onChange({ kind: 'keynotify', clientId, key, stop: true })
    }
    return removed
  }

  /** Forgets every registration of a client (it disconnected); returns how many there were. */
  dropClient(clientId: string): number {
    const keys = this.byClient.get(clientId)
    if (!keys) return 0
    this.byClient.delete(clientId)
    for (const id of keys) remove(this.byKey, id, clientId)
    this.onChange({ kind: 'dropClient', clientId })
    return keys.size
  }

  /** Every registration as (client id, key). */
  *entries(): IterableIterator<[string, Buffer]> {
    for (const [clientId, keys] of this.byClient) {
      for (const id of keys) yield [clientId, Buffer.from(id, 'latin1')]
    }
  }

  /** Every key with at least one registration. */
  *keys(): IterableIterator<Buffer> {
    for (const id of this.byKey.keys()) yield Buffer.from(id, 'latin1')
  }

  /** The clients with at least one registration. */
  clients(): string[] {
    return [...this.byClient.keys()]
  }

  /** The notifications one change produces, one per registered client, in registration order. */
  notificationsFor(change: KeyChange): OutgoingNotification[] {
    const clients = this.byKey.get(change.key.toString('latin1'))
    if (!clients || clients.size === 0) return []
    const payload = change.kind === 'set' ? Notification.set(change.value) : Notification.delete
    const version = change.kind === 'set' ? change.record.version : change.version
    const out: OutgoingNotification[] = []
    for (const [clientId, topic] of clients) out.push({ clientId, key: change.key, topic, payload, version })
    return out
  }
}

function add(index: Map<string, Set<string>>, a: string, b: string): void {
  let set = index.get(a)
  if (!set) index.set(a, (set = new Set()))
  set.add(b)
}

function remove(
  index: Map<string, { delete(b: string): boolean; readonly size: number }>,
  a: string,
  b: string,
): boolean {
  const set = index.get(a)
  if (!set || !set.delete(b)) return false
  if (set.size === 0) index.delete(a)
  return true
}
