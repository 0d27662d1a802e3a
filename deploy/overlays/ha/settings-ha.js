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
const shared = require(
  require('node:fs').existsSync(`${__dirname}/shared-flows.js`) ? './shared-flows.js' : '../../base/shared-flows.js',
)
const { base, aio, name, persistently } = shared

const PREFIX = process.env.NODE_RED_HA_KEY_PREFIX || 'nodered/ha/'
const LEADER_KEY = `${PREFIX}leader`
const TERM_MS = Number(process.env.NODE_RED_HA_TERM_MS) || 10000

const client = shared.connect('ha')
// Each candidate under a name of its own (two of one name would both lead), and a term overwritten by a
// stray write is ridden out for a term rather than ending the active at once.
const election = new aio.LeaderElection(client, LEADER_KEY, {
  candidate: name,
  termMs: TERM_MS,
  exclusiveCandidate: true,
  rideOutOverwrite: true,
})
election.on('overwritten', ({ holder }) =>
  log(`${LEADER_KEY} was written by someone else (${holder}) while this term held: staying active a term to see`),
)
election.on('reclaimed', ({ fencingToken: token }) => {
  fencingToken = token
  log(`${LEADER_KEY} taken back: nobody renewed the stray write`)
})
let fencingToken = null

const log = shared.logger('ha')

/** Resolves once this runtime is the active one; campaigns until then. */
let elected = null
function active() {
  elected ??= (async () => {
    log(`standing by: campaigning for ${LEADER_KEY}`)
    fencingToken = await persistently(log, 'the campaign', () => election.campaign())
    log(`active (elected ${new Date().toISOString()})`)
    election.on('lost', ({ reason }) => {
      if (reason === 'resigned') return
      log(`no longer active (${reason}): exiting, to restart as a standby`)
      process.exit(70)
    })
  })()
  return elected
}

// The flows and credentials in the state store, read once elected, written fenced with the term's token.
const { storageModule } = shared.sharedFlowsStorage({
  client,
  prefix: PREFIX,
  log,
  before: active,
  setOptions() {
    if (!election.isLeader) throw new Error('this Node-RED is the standby: deploy to the active one')
    return { fencingToken }
  },
})
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
