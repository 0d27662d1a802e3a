import type { Node, NodeStatus } from 'node-red'
import type { ConnectionStatus } from '../../src/client'
import type { Translate } from './i18n'
import { describeError } from './errors'
import { notAuthorized } from './connection-log'
import { worded } from './error-text'

/** Status texts are short by convention (under 20 characters); longer details go to the log and to Catch. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

/**
 * The connection part of every node's status: the colour and shape say how the connection is,
 * the text says what happened last. Connection changes replace the text; outcomes keep the colour.
 */
export function connectionStatus(status: ConnectionStatus, t: Translate): NodeStatus {
  switch (status.state) {
    case 'connected':
      // Connected to a broker with no state store behind it: msgs fail at once, so not green.
      if (status.problem === 'noService') return { fill: 'yellow', shape: 'dot', text: t('status.noService') }
      return { fill: 'green', shape: 'dot', text: t('node-red:common.status.connected') }
    case 'connecting':
    case 'reconnecting':
      // Between takeovers the client waits longer and longer: the reason stays in view meanwhile.
      if (status.problem === 'takenOver') return { fill: 'yellow', shape: 'ring', text: t('status.takenOver') }
      return { fill: 'yellow', shape: 'ring', text: t('node-red:common.status.connecting') }
    case 'disconnected':
    case 'closed':
      if (status.problem === 'authFailed') return { fill: 'red', shape: 'ring', text: t(notAuthorized(status) ? 'status.notAuthorized' : 'status.authFailed') }
      // A problem the client named has a catalogue text that says what to change, shown in full.
      if (status.problem) return { fill: 'red', shape: 'ring', text: t(`status.${status.problem}`) }
      return {
        fill: 'red',
        shape: 'ring',
        // The reason is the one thing a user needs to fix the connection, so it stays even past 20
        // characters, the address and port included ("connect ECONNREFUSED [::1]:18830" is 32 long).
        text: status.reason
          ? `${t('node-red:common.status.disconnected')}: ${clip(status.reason.replace(/^connect /, ''), 48)}`
          : t('node-red:common.status.disconnected'),
      }
  }
}

/** How often a count in a status (msgs waiting, …) is shown at most. */
const COUNT_EVERY_MS = 100

/**
 * A node's status. It is set for every message, so it is kept cheap: texts are translated once per
 * key (the runtime's language is fixed while a node lives; the i18next lookup was some 8 % of
 * Node-RED's busy time in the flow benchmark), and a status identical to the one shown is not set
 * again (Status nodes would only see a repeat; every change of text, colour or shape is set at once).
 */
export class StatusView {
  private connection: ConnectionStatus = { state: 'disconnected' }
  private readonly texts = new Map<string, string>()
  private readonly cachedT: Translate
  /** What the node shows now; undefined until the first status. */
  private shown: NodeStatus | undefined
  private pendingCount: { key: string; count: number } | undefined
  private countTimer: ReturnType<typeof setTimeout> | undefined

  /**
   * A failure in the catalogue's words, naming `key` (the msg's) when given and saying what to do
   * (nodes/lib/error-text.ts); a connection error first gets the config node's words (`explainConnection`).
   */
  readonly explain = (err: unknown, key?: string): unknown => worded(this.explainConnection(err), key, this.t)

  /** `onFailure` hears of every failure shown, for the connection's last errors in the sidebar. */
  constructor(
    private readonly node: Node,
    private readonly t: Translate,
    private readonly onFailure?: (err: unknown, key?: string) => void,
    private readonly explainConnection: (err: unknown) => unknown = (err) => err,
  ) {
    this.cachedT = (key, substitutions) => (substitutions === undefined ? this.text(key) : t(key, substitutions))
  }

  get connected(): boolean {
    return this.connection.state === 'connected'
  }

  /** The config node reports every connection change here. */
  onConnection(status: ConnectionStatus): void {
    this.connection = status
    this.show(connectionStatus(status, this.cachedT))
  }

  /** Outcome of the last operation, in the connection's colour. `key` is a `status.*` catalogue entry or a full key. */
  outcome(key: string, detail?: string): void {
    const connected = this.connected
    // Catalogue texts are short by design; only the variable detail (a key name) is cut to fit.
    const text = this.text(key) + (detail === undefined ? '' : ` ${clip(detail, 12)}`)
    this.show({ fill: connected ? 'green' : 'red', shape: connected ? 'dot' : 'ring', text })
  }

  /** An outcome with a count in it (`status.<key>_one`, `_other`, … as the language's plural forms go), in the connection's colour. */
  counted(key: string, count: number): void {
    // A count may change with every msg: it is translated and shown at most once per COUNT_EVERY_MS,
    // the latest count last, so a burst of msgs costs one status, not one per msg.
    this.pendingCount = { key, count }
    if (this.countTimer) return
    this.showCount()
    this.countTimer = setTimeout(() => {
      this.countTimer = undefined
      if (this.pendingCount) this.counted(this.pendingCount.key, this.pendingCount.count)
    }, COUNT_EVERY_MS)
    this.countTimer.unref?.()
  }

  private showCount(): void {
    const pending = this.pendingCount
    if (!pending) return
    const connected = this.connected
    this.show({ fill: connected ? 'green' : 'red', shape: connected ? 'dot' : 'ring', text: this.t(pending.key, { count: pending.count }) })
  }

  /**
   * An outcome that did not do what was asked (not acquired, lost, a release that released nothing):
   * never green. `detail` (who holds a lock, since how long, already short) follows the text.
   */
  attention(key: string, detail?: string): void {
    const text = this.text(key) + (detail === undefined ? '' : ` ${detail}`)
    this.show({ fill: 'yellow', shape: this.connected ? 'dot' : 'ring', text })
  }

  /** `error: key is empty`: the failure's short name from the catalogue (`failure.<code>`), else its kind; `msgKey`: the msg's key, when it had one. */
  failure(err: unknown, msgKey?: string): void {
    this.onFailure?.(err, msgKey)
    const { kind, code } = describeError(err)
    const key = `failure.${code}`
    let name = this.texts.get(key)
    if (name === undefined) {
      name = this.t(key, { defaultValue: kind })
      this.texts.set(key, name)
    }
    this.show({ fill: 'red', shape: this.connected ? 'dot' : 'ring', text: `${this.text('node-red:common.status.error')}: ${name}` })
  }

  /** A problem with the node's own configuration: shown until the node is redeployed. */
  misconfigured(key: string): void {
    this.show({ fill: 'red', shape: 'ring', text: this.text(key) })
  }

  private text(key: string): string {
    let text = this.texts.get(key)
    if (text === undefined) {
      text = this.t(key)
      this.texts.set(key, text)
    }
    return text
  }

  private show(status: NodeStatus): void {
    // Whatever comes after a count replaces it: a count still waiting is not shown over it.
    this.pendingCount = undefined
    const shown = this.shown
    if (shown !== undefined && shown.fill === status.fill && shown.shape === status.shape && shown.text === status.text) return
    this.shown = status
    this.node.status(status)
  }
}
