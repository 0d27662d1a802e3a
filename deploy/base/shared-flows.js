// What the HA and active/active overlays share (settings-ha.js, settings-active-active.js): the base
// settings, the package where Node-RED finds its nodes, a state store connection of the runtime's
// own, and Node-RED's storage with the flows and credentials kept in state store keys as well as in
// /data. It lies beside settings.js both in the ConfigMap (/etc/node-red) and in the repository
// (deploy/base); the base's settings do not load it.
'use strict'

const base = require('./settings.js')
// Where Node-RED finds its nodes (the base settings' resolveModule).
const aio = require(base.resolveModule('node-red-contrib-aio-statestore'))
// Node-RED's own storage (flows.json and the rest of /data), which the shared storage wraps.
const localfilesystem = require(base.resolveModule('@node-red/runtime/lib/storage/localfilesystem'))

const env = aio.readAioEnvironment()
/** The runtime's name: its client id (the pod's name in the kit), else the host's. */
const name = env.clientId || require('node:os').hostname()

/** A state store client named `<name>-<purpose>`: a connection of its own (the config nodes and the context store have theirs). */
function connect(purpose) {
  return new aio.StateStoreClient({
    brokerUrl: env.brokerUrl || 'mqtt://127.0.0.1:1883',
    clientId: `${name}-${purpose}`,
    ...(env.keepaliveSec !== undefined ? { keepaliveSec: env.keepaliveSec } : {}),
    ...aio.environmentAuth(env),
    ...(aio.environmentTls(env) ? { tls: aio.environmentTls(env) } : {}),
  })
}

/** A log line `[<overlay>] <name>: <text>`. */
function logger(overlay) {
  return (text) => console.log(`[${overlay}] ${name}: ${text}`)
}

/**
 * Tried until it succeeds: Node-RED drops an error of its flow loading silently, and a runtime that
 * never loads its flows would serve nothing.
 */
async function persistently(log, what, attempt) {
  for (;;) {
    try {
      return await attempt()
    } catch (err) {
      log(`${what} failed, trying again: ${err.message}`)
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  }
}

/**
 * Node-RED's storage API over /data, with the flows and credentials also in the state store keys
 * `<prefix>flows` and `<prefix>credentials`. A runtime starts with the keys' documents (the first
 * one seeds them from its /data, which then follows the keys); each save writes the key, persisted
 * (a cluster restart finds the last deploy, not whichever pod's /data comes first), then /data.
 *  - `before()` is awaited before a key is read (HA: until elected; active/active: the flows key watched).
 *  - `setOptions()` gives the write's options beyond persist (HA: the term's fencing token); it throws to refuse the save.
 *  - `written(version)` hears the version of each write of this runtime.
 *  - `init(runtime)` hears the runtime Node-RED hands its storage.
 */
function sharedFlowsStorage({
  client,
  prefix,
  log,
  before = async () => {},
  setOptions = () => ({}),
  written = () => {},
  init = () => {},
}) {
  const keys = { flows: `${prefix}flows`, credentials: `${prefix}credentials` }

  /** A key holding a JSON document, or undefined. */
  function load(key) {
    return persistently(log, `reading ${key}`, async () => {
      const { value } = await client.get(key)
      return value === null ? undefined : JSON.parse(value.toString('utf8'))
    })
  }
  async function store(key, document) {
    const { version } = await client.set(key, JSON.stringify(document), { ...setOptions(), persist: true })
    written(version)
  }
  async function shared(key, readLocal, saveLocal) {
    await before()
    const document = await load(key)
    if (document === undefined) {
      const local = await readLocal()
      await persistently(log, `seeding ${key}`, () => store(key, local))
      return local
    }
    await saveLocal(document)
    return document
  }

  return {
    keys,
    storageModule: {
      ...localfilesystem,
      init(settings, runtime) {
        init(runtime)
        return localfilesystem.init(settings, runtime)
      },
      getFlows: () =>
        shared(
          keys.flows,
          () => localfilesystem.getFlows(),
          (flows) => localfilesystem.saveFlows(flows),
        ),
      async saveFlows(flows, user) {
        await store(keys.flows, flows)
        return localfilesystem.saveFlows(flows, user)
      },
      getCredentials: () =>
        shared(
          keys.credentials,
          () => localfilesystem.getCredentials(),
          (credentials) => localfilesystem.saveCredentials(credentials),
        ),
      async saveCredentials(credentials) {
        await store(keys.credentials, credentials)
        return localfilesystem.saveCredentials(credentials)
      },
    },
  }
}

module.exports = { base, aio, name, connect, logger, persistently, sharedFlowsStorage }
