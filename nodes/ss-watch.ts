import type { NodeAPI, NodeDef, Node, NodeMessage } from 'node-red'
import type { KeyNotification, Observation } from '../src/client'
import { decodePayload, isDecoding, type Decoding } from './msg/codec'
import { InputError } from './lib/errors'
import { onInput, reportError } from './msg/handler'
import { isKeyPattern, preview, parseKey, parseWatchedKey } from './msg/props'
import { attach } from './config/config-node'
import type { SettingsOf } from './config/schemas'

/** The node's config as saved, derived from its schema. */
type WatchDef = NodeDef & SettingsOf<'ss-watch'>

/**
 * A backlog of notifications this long (ms) or more is shown in the status, in whole seconds, instead of the key that
 * changed.
 */
const BEHIND_SHOWN_MS = 1000

/** Configured keys: one per line (blank lines ignored). */
function configuredKeys(keys: unknown): string[] {
  const list = Array.isArray(keys) ? keys : typeof keys === 'string' ? keys.split(/\r?\n/) : []
  return list.map((k) => String(k).trim()).filter((k) => k.length > 0)
}

/** The defaults of settings.js's `aioStateStore: { maxWatchesPerNode, maxWatchesPerConnection }`. */
const MAX_WATCHES_PER_NODE = 1000
const MAX_WATCHES_PER_CONNECTION = 10_000

/** Per config node: the keys its watch keys nodes watch, summed over the nodes. */
const connectionTallies = new WeakMap<object, { count: number }>()

function watchSetting(RED: NodeAPI, name: 'maxWatchesPerNode' | 'maxWatchesPerConnection', fallback: number): number {
  const v = ((RED.settings as unknown as { aioStateStore?: Record<string, unknown> }).aioStateStore ?? {})[name]
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : fallback
}

export = function (RED: NodeAPI) {
  function SsWatch(this: Node, def: WatchDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const decode: Decoding = isDecoding(def.decode) ? def.decode : 'auto'
    const overrides = def.overrides !== false
    /** Each wanted key: 'wanted' (to observe when connected), 'pending' (request in flight), or its observation. */
    const watched = new Map<string, Observation | 'wanted' | 'pending'>()
    let closing = false
    /** Set at deploy when a configured key is a pattern: the status keeps saying so over connection changes. */
    let refusing = false

    const { store, status, t, client } = attach(RED, node, def.store, {
      onConnection: (s) => {
        if (s.state === 'connected') ensureAll()
        if (refusing) status.misconfigured('status.patternRefused')
        // The client registers the watched keys again by itself: back to "watching N", not "connected".
        else if (s.state === 'connected' && !s.problem && [...watched.values()].some((o) => typeof o !== 'string'))
          status.outcome('status.watching', String(watched.size))
      },
      beforeClose: async () => {
        closing = true
        const observations = [...watched.values()]
        watched.clear()
        recount()
        await Promise.all(
          observations.flatMap((o) => (typeof o === 'string' ? [] : [o.close().catch(() => undefined)])),
        )
      },
    })

    function emit(key: string, value: Buffer | null, extra: NodeMessage): void {
      const msg: NodeMessage = { topic: key, payload: undefined, ...extra }
      try {
        if (value !== null) msg.payload = decodePayload(value, decode, t)
      } catch (err) {
        msg.payload = value
        reportError(node, status, err, msg)
        return
      }
      node.send(msg)
    }

    function notified(key: string, n: KeyNotification): void {
      const behindMs = store?.activity.watchNotified(key, n) ?? null
      if (behindMs !== null && behindMs >= BEHIND_SHOWN_MS)
        status.attention('status.behind', `${Math.round(behindMs / 1000)} s`)
      else status.outcome('status.changed', key)
      emit(key, n.value, { operation: n.operation, version: n.version?.toString(), reconciled: n.reconciled })
    }

    // This node's share of its connection's watched keys, counted as they are asked for (before the request).
    const tally = store
      ? (connectionTallies.get(store) ?? connectionTallies.set(store, { count: 0 }).get(store)!)
      : { count: 0 }
    let mine = 0
    function recount(): void {
      tally.count += watched.size - mine
      mine = watched.size
    }

    async function observe(key: string, initial: boolean): Promise<void> {
      if (closing || (watched.has(key) && watched.get(key) !== 'wanted')) return
      watched.set(key, 'pending')
      recount()
      let observation: Observation
      const c = await client().catch((err: unknown) => {
        watched.set(key, 'wanted')
        throw err
      })
      try {
        observation = await c.observe(key, (n) => notified(key, n))
      } catch (err) {
        if (watched.get(key) === 'pending') watched.set(key, 'wanted')
        throw err
      }
      if (closing || watched.get(key) !== 'pending') {
        // unwatched (or closed) while the request was in flight
        await observation.close()
        return
      }
      watched.set(key, observation)
      store?.activity.watchStarted(node.id, key)
      status.outcome('status.watching', String(watched.size))
      if (initial) {
        const current = await c.get(key)
        if (current.value !== null)
          emit(key, current.value, { operation: 'SET', version: current.version?.toString(), initial: true })
      }
    }

    function ensureAll(): void {
      for (const [key, state] of watched) {
        // A registration cut short by the node closing (a deploy, a stop) is no error of the flow's.
        if (state === 'wanted')
          observe(key, def.initial === true).catch(
            (err: unknown) => closing || reportError(node, status, err, { topic: key }),
          )
      }
    }

    /**
     * A watch msg may name any key: past the node's bound (`aioStateStore.maxWatchesPerNode`) or the
     * connection's (`maxWatchesPerConnection`, over every node of one config node) the msg fails
     * `WatchLimit` before any key of it is registered.
     */
    function admit(keys: string[]): void {
      const fresh = new Set(keys.filter((k) => !watched.has(k)))
      if (fresh.size === 0) return
      const perNode = watchSetting(RED, 'maxWatchesPerNode', MAX_WATCHES_PER_NODE)
      if (watched.size + fresh.size > perNode)
        throw new InputError(
          'WatchLimit',
          t('errors.watchLimit', { count: watched.size, max: perNode, setting: 'aioStateStore.maxWatchesPerNode' }),
        )
      const perConnection = watchSetting(RED, 'maxWatchesPerConnection', MAX_WATCHES_PER_CONNECTION)
      if (tally.count + fresh.size > perConnection)
        throw new InputError(
          'WatchLimit',
          t('errors.watchLimit', {
            count: tally.count,
            max: perConnection,
            setting: 'aioStateStore.maxWatchesPerConnection',
          }),
        )
    }

    async function unobserve(key: string): Promise<void> {
      const state = watched.get(key)
      watched.delete(key)
      recount()
      store?.activity.watchStopped(node.id, key)
      if (state && typeof state !== 'string') await state.close()
      status.outcome('status.watching', String(watched.size))
    }

    onInput(node, status, async (msg) => {
      if (!overrides) throw new InputError('ControlRefused', t('errors.controlRefused'))
      const action = msg.action
      if (action !== 'watch' && action !== 'unwatch')
        throw new InputError('ActionUnknown', t('errors.action', { value: preview(action), allowed: 'watch, unwatch' }))
      const topics: unknown[] = Array.isArray(msg.topic) ? msg.topic : [msg.topic]
      // Without a config node there is no client id to size the limit by; the watch then fails with NoConfig.
      const keys = topics.map((k) =>
        action === 'watch' && store ? parseWatchedKey(k, store.clientId, t) : parseKey(k, t),
      )
      if (action === 'watch') admit(keys)
      for (const key of keys) await (action === 'watch' ? observe(key, def.initial === true) : unobserve(key))
    })

    const configured = configuredKeys(def.keys)
    // A configured pattern is refused at deploy: the node watches none of its keys, and says why.
    const patterns = configured.filter(isKeyPattern)
    if (patterns.length > 0) {
      refusing = true
      node.warn(t('errors.patternNotWatchable', { key: patterns.map((k) => preview(k)).join(', ') }))
      status.misconfigured('status.patternRefused')
    } else for (const key of configured) watched.set(key, 'wanted')
    recount()
    // Otherwise the next 'connected' starts them: waiting here could only time out on a slow broker.
    if (status.connected) ensureAll()
  }

  RED.nodes.registerType('ss-watch', SsWatch)
}
