/**
 * A Node-RED runtime seen from outside, as the editor sees it: the /comms websocket's debug
 * messages, node statuses and deploys, and a wait for what arrives there.
 */
import WebSocket from 'ws'
import { scaled } from './deadline'

export interface DebugMessage {
  id: string
  z?: string
  name?: string
  topic?: string
  msg: string
  format?: string
  /** Set when the message is a node's warn (30) or error (20) log rather than debug output. */
  level?: number
}

/** A debug message's value as the node saw it (the reverse of RED.util.encodeObject, for plain values). */
export function debugValue(d: DebugMessage): unknown {
  const format = d.format ?? ''
  if (format.startsWith('string')) return d.msg
  if (format === 'number') return Number(d.msg)
  if (format === 'boolean') return d.msg === 'true'
  if (format === 'null') return null
  if (format === 'undefined') return undefined
  if (format.startsWith('buffer')) return Buffer.from(d.msg, 'hex')
  return JSON.parse(d.msg)
}

export interface NodeStatus {
  text?: string
  fill?: string
  shape?: string
}

export class Comms {
  readonly debug: DebugMessage[] = []
  /** The latest status of each node, by node id. */
  readonly status = new Map<string, NodeStatus>()
  /** Flow revisions the runtime has started, in order. */
  readonly deploys: string[] = []
  private ws: WebSocket | null = null
  private waiters: Array<() => void> = []

  constructor(private readonly address: string) {}

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.address)
      this.ws = ws
      ws.once('error', reject)
      ws.once('open', () => {
        ws.off('error', reject)
        ws.on('error', () => {})
        ;(ws as unknown as { _socket?: { setNoDelay(v: boolean): void } })._socket?.setNoDelay(true)
        // Subscriptions are not acknowledged. This frame is on the wire before the caller's next
        // HTTP request (a deploy) is sent, and the runtime handles it first.
        ws.send(JSON.stringify({ subscribe: 'debug' }))
        ws.send(JSON.stringify({ subscribe: 'status/#' }))
        ws.send(JSON.stringify({ subscribe: 'notification/runtime-deploy' }))
        resolve()
      })
      ws.on('message', (data) => {
        const batch = JSON.parse(String(data)) as Array<{ topic: string; data: unknown }> | { auth: string }
        if (!Array.isArray(batch)) return
        for (const { topic, data: d } of batch) {
          if (topic === 'debug') this.debug.push(d as DebugMessage)
          else if (topic.startsWith('status/')) this.status.set(topic.slice('status/'.length), d as NodeStatus)
          else if (topic === 'notification/runtime-deploy') this.deploys.push((d as { revision: string }).revision)
        }
        for (const w of this.waiters.splice(0)) w()
      })
    })
  }

  /** Resolves when check() passes on the messages so far; rejects with what arrived after timeoutMs. */
  async waitFor<T>(
    check: (messages: DebugMessage[]) => T | undefined,
    timeoutMs: number,
    what = 'debug output',
  ): Promise<T> {
    const deadline = Date.now() + scaled(timeoutMs)
    for (;;) {
      const result = check(this.debug)
      if (result !== undefined) return result
      const left = deadline - Date.now()
      if (left <= 0) {
        const statuses = [...this.status].map(([id, st]) => `  ${id}: ${st.text ?? ''}`).join('\n')
        throw new Error(
          `${what} not as expected after ${timeoutMs} ms (scaled); debug output:\n${formatDebug(this.debug)}\nnode status:\n${statuses}`,
        )
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  close(): void {
    this.ws?.close()
    this.ws = null
  }
}

export function formatDebug(messages: DebugMessage[]): string {
  return (
    messages
      .map((m) => `  [${m.name ?? m.id}]${m.level ? ` level ${m.level}` : ''} ${m.format}: ${m.msg}`)
      .join('\n') || '  (nothing)'
  )
}
