// Node-RED, highly available (deploy/overlays/ha): the base settings, and two replicas of which one
// is active and one stands by, by this package's leader election on the state store key
// nodered/ha/leader. The flows are kept in the state store as well as in /data, so the standby runs
// the flows the active last deployed.
//  - A runtime loads its flows only once elected: the standby's flows do not run, so nothing is
//    handled twice. Its editor answers, read-only; its readiness (/ha/active) fails, so the Service
//    sends the editor, and its deploys, to the active one.
//  - The active writes every deploy to the state store, fenced with its term's token.
//  - The active pod dies: its term is not renewed and ends after NODE_RED_HA_TERM_MS; the standby is
//    elected, loads the flows from the state store and starts them, and they go on from what the
//    state store holds (keys, context in the statestore store).
//  - A term that is lost while the process lives (the broker out of reach for a whole term) ends the
//    process: Kubernetes restarts it as a standby, and two actives never run at once.
'use strict'

// Beside it in the ConfigMap; in the repository (run by hand, docs/cluster.md), in deploy/base.
const base = require(
  require('node:fs').existsSync(`${__dirname}/settings.js`) ? './settings.js' : '../../base/settings.js',
)
// Where Node-RED finds its nodes (the base settings' resolveModule).
const aio = require(base.resolveModule('node-red-contrib-aio-statestore'))
// Node-RED's own storage (flows.json and the rest of /data), which the HA storage wraps.
const localfilesystem = require(base.resolveModule('@node-red/runtime/lib/storage/localfilesystem'))

const PREFIX = process.env.NODE_RED_HA_KEY_PREFIX || 'nodered/ha/'
const KEYS = { leader: `${PREFIX}leader`, flows: `${PREFIX}flows`, credentials: `${PREFIX}credentials` }
const TERM_MS = Number(process.env.NODE_RED_HA_TERM_MS) || 10000

const env = aio.readAioEnvironment()
const name = env.clientId || require('node:os').hostname()
const client = new aio.StateStoreClient({
  brokerUrl: env.brokerUrl || 'mqtt://127.0.0.1:1883',
  // A connection of its own (the config nodes and the context store have theirs).
  clientId: `${name}-ha`,
  ...(env.keepaliveSec !== undefined ? { keepaliveSec: env.keepaliveSec } : {}),
  ...aio.environmentAuth(env),
  ...(aio.environmentTls(env) ? { tls: aio.environmentTls(env) } : {}),
})
// Each candidate under a name of its own (two of one name would both lead), and a term overwritten by a
// stray write is ridden out for a term rather than ending the active at once.
const election = new aio.LeaderElection(client, KEYS.leader, {
  candidate: name,
  termMs: TERM_MS,
  exclusiveCandidate: true,
  rideOutOverwrite: true,
})
election.on('overwritten', ({ holder }) =>
  log(`${KEYS.leader} was written by someone else (${holder}) while this term held: staying active a term to see`),
)
election.on('reclaimed', ({ fencingToken: token }) => {
  fencingToken = token
  log(`${KEYS.leader} taken back: nobody renewed the stray write`)
})
let fencingToken = null

const log = (text) => console.log(`[ha] ${name}: ${text}`)

/** Resolves once this runtime is the active one; campaigns until then. */
let elected = null
function active() {
  elected ??= (async () => {
    log(`standing by: campaigning for ${KEYS.leader}`)
    fencingToken = await persistently('the campaign', () => election.campaign())
    log(`active (elected ${new Date().toISOString()})`)
    election.on('lost', ({ reason }) => {
      if (reason === 'resigned') return
      log(`no longer active (${reason}): exiting, to restart as a standby`)
      process.exit(70)
    })
  })()
  return elected
}

/**
 * Tried until it succeeds: Node-RED drops an error of its flow loading silently, and an active that
 * never loads its flows would serve nothing.
 */
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

/** A key holding a JSON document, or undefined. */
function load(key) {
  return persistently(`reading ${key}`, async () => {
    const { value } = await client.get(key)
    return value === null ? undefined : JSON.parse(value.toString('utf8'))
  })
}
async function store(key, document) {
  if (!election.isLeader) throw new Error('this Node-RED is the standby: deploy to the active one')
  // Persisted: a cluster restart finds the flows the active last deployed, not whichever /data came first.
  await client.set(key, JSON.stringify(document), { fencingToken, persist: true })
}

/** Node-RED's storage API: /data as ever, and the flows and credentials in the state store too. */
const storageModule = {
  ...localfilesystem,
  init: (settings, runtime) => localfilesystem.init(settings, runtime),
  async getFlows() {
    await active()
    const shared = await load(KEYS.flows)
    if (shared === undefined) {
      // The first active: its /data seeds the state store.
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
    await active()
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
active()
// A pod stopped on purpose (a deletion, a drain) hands over at once rather than at the term's end;
// Node-RED's own SIGTERM handler then closes the flows and exits.
process.once('SIGTERM', () => void election.resign().catch(() => {}))

module.exports = {
  ...base,
  storageModule,
  // /ha/active answers 200 on the active one only: the readiness probe, so the Service sends the
  // editor to it. The standby's admin API reads but refuses every change.
  httpAdminMiddleware(req, res, next) {
    if (req.path === '/ha/active')
      return void res.status(election.isLeader ? 200 : 503).json({ active: election.isLeader, name })
    if (!election.isLeader && req.method !== 'GET')
      return void res.status(503).json({ code: 'standby', message: `${name} is the standby` })
    next()
  },
}
