import { StateStoreClient, type ClientOptions, type ConnectionStatus, type KeyNotification } from '../../src/client'
import { describeLimit, scaled } from './deadline'
import { until } from './wait'

let counter = 0

/** A unique client id per test, so sessions and notifications never cross between tests. */
export function uniqueId(prefix = 'client'): string {
  counter += 1
  return `${prefix}-${process.pid}-${counter}-${Math.random().toString(16).slice(2, 8)}`
}

/** Creates clients and closes every one of them in `closeAll` (call it from an afterEach hook). */
export class ClientPool {
  private readonly clients: StateStoreClient[] = []

  create(brokerUrl: string, options: Partial<ClientOptions> = {}): StateStoreClient {
    const client = new StateStoreClient({
      brokerUrl,
      clientId: uniqueId(),
      reconnectMinMs: 50,
      reconnectMaxMs: 200,
      ...options,
    })
    this.clients.push(client)
    return client
  }

  async ready(brokerUrl: string, options: Partial<ClientOptions> = {}): Promise<StateStoreClient> {
    const client = this.create(brokerUrl, options)
    await client.ready({ timeoutMs: scaled(5000) })
    return client
  }

  /** Clients made elsewhere, closed with the rest; returned as given. */
  add<C extends StateStoreClient[]>(...clients: C): C {
    this.clients.push(...clients)
    return clients
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.clients.splice(0).map((c) => c.close()))
  }
}

/** Collects notifications and lets a test wait for the n-th one. */
export class Inbox {
  readonly items: KeyNotification[] = []
  readonly listener = (n: KeyNotification): void => {
    this.items.push(n)
  }

  async count(n: number, timeoutMs = 5000): Promise<KeyNotification[]> {
    await until(() => this.items.length >= n, `${n} notifications (have ${this.items.length})`, timeoutMs)
    return this.items.slice(0, n)
  }
}

/** Waits for a status matching `predicate` on a client. */
export function statusWhere(
  client: StateStoreClient,
  predicate: (s: ConnectionStatus) => boolean,
  timeoutMs = 10000,
): Promise<ConnectionStatus> {
  const limit = scaled(timeoutMs)
  return new Promise((resolve, reject) => {
    if (predicate(client.status)) return resolve(client.status)
    const timer = setTimeout(() => {
      client.off('status', onStatus)
      reject(
        new Error(
          `no matching status within ${describeLimit(timeoutMs, limit)}; last: ${JSON.stringify(client.status)}`,
        ),
      )
    }, limit)
    const onStatus = (s: ConnectionStatus) => {
      if (!predicate(s)) return
      clearTimeout(timer)
      client.off('status', onStatus)
      resolve(s)
    }
    client.on('status', onStatus)
  })
}
