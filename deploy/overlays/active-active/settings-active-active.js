// Node-RED active/active (deploy/overlays/active-active): the base settings, and N replicas that all
// run the same flows, kept in the state store.
//  - The flows and credentials are the state store keys nodered/aa/flows and nodered/aa/credentials
//    (persisted). A replica starts with them (the first one seeds them from its /data).
//  - A deploy to any replica (the Service picks one) writes them; every other replica hears the
//    change (a key notification) and loads the flows again: the editor's deploys reach every replica.
//  - Shared work is the flows' own: an mqtt in node on `$share/<group>/<topic>` gets each msg on one
//    replica, a run-once claim (the lock node) makes a redelivery a duplicate, a schedule behind
//    the lock node's leader gate runs on one replica, context lives in the statestore store.
'use strict'

// Beside it in the ConfigMap; in the repository (run by hand, docs/cluster.md), in deploy/base.
const base = require(require('node:fs').existsSync(`${__dirname}/settings.js`) ? './settings.js' : '../../base/settings.js')
const aio = require(base.resolveModule('node-red-contrib-aio-statestore'))
const localfilesystem = require(base.resolveModule('@node-red/runtime/lib/storage/localfilesystem'))

const PREFIX = process.env.NODE_RED_AA_KEY_PREFIX || 'nodered/aa/'
const KEYS = { flows: `${PREFIX}flows`, credentials: `${PREFIX}credentials` }

const env = aio.readAioEnvironment()
const name = env.clientId || require('node:os').hostname()
const client = new aio.StateStoreClient({
  brokerUrl: env.brokerUrl || 'mqtt://127.0.0.1:1883',
  // A connection of its own (the config nodes and the context store have theirs).
  clientId: `${name}-flows`,
  ...(env.keepaliveSec !== undefined ? { keepaliveSec: env.keepaliveSec } : {}),
  ...aio.environmentAuth(env),
  ...(aio.environmentTls(env) ? { tls: aio.environmentTls(env) } : {}),
})
const log = (text) => console.log(`[active-active] ${name}: ${text}`)

/** Tried until it succeeds: Node-RED drops an error of its flow loading silently. */
async function persistently(what, attempt) {
  for (;;) {
    try {
      return await attempt()
    } catch (err) {
      log(`${what} failed, trying again: ${err.message}`)
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  }
}

/** The versions this replica wrote: their notifications are its own deploy, not another's. */
const written = new Set()
async function store(key, document) {
  const { version } = await client.set(key, JSON.stringify(document), { persist: true })
  written.add(version.toString())
}
function load(key) {
  return persistently(`reading ${key}`, async () => {
    const { value } = await client.get(key)
    return value === null ? undefined : JSON.parse(value.toString('utf8'))
  })
}

let runtime = null
let watching = null
/** Another replica's deploy: load the flows again (Node-RED reads them from the storage, below). */
function follow() {
  watching ??= persistently(`watching ${KEYS.flows}`, () =>
    client.observe(KEYS.flows, (note) => {
      if (note.reconciled && note.operation !== 'SET') return
      if (note.version && written.delete(note.version.toString())) return
      log('flows deployed on another replica: loading them')
      runtime?.nodes?.loadFlows(true).catch((err) => log(`loading the flows failed: ${err.message}`))
    }),
  )
  return watching
}

const storageModule = {
  ...localfilesystem,
  init(settings, r) {
    runtime = r
    return localfilesystem.init(settings, r)
  },
  async getFlows() {
    await follow()
    const shared = await load(KEYS.flows)
    if (shared === undefined) {
      const flows = await localfilesystem.getFlows()
      await persistently(`seeding ${KEYS.flows}`, () => store(KEYS.flows, flows))
      return flows
    }
    await localfilesystem.saveFlows(shared)
    return shared
  },
  async saveFlows(flows, user) {
    await store(KEYS.flows, flows)
    return localfilesystem.saveFlows(flows, user)
  },
  async getCredentials() {
    const shared = await load(KEYS.credentials)
    if (shared === undefined) {
      const credentials = await localfilesystem.getCredentials()
      await persistently(`seeding ${KEYS.credentials}`, () => store(KEYS.credentials, credentials))
      return credentials
    }
    await localfilesystem.saveCredentials(shared)
    return shared
  },
  async saveCredentials(credentials) {
    await store(KEYS.credentials, credentials)
    return localfilesystem.saveCredentials(credentials)
  },
}

module.exports = { ...base, storageModule }
