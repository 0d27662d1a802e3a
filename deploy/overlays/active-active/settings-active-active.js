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
const shared = require(
  require('node:fs').existsSync(`${__dirname}/shared-flows.js`) ? './shared-flows.js' : '../../base/shared-flows.js',
)
const { base, persistently } = shared

const PREFIX = process.env.NODE_RED_AA_KEY_PREFIX || 'nodered/aa/'

const client = shared.connect('flows')
const log = shared.logger('active-active')

/** The versions this replica wrote: their notifications are its own deploy, not another's. */
const written = new Set()
let runtime = null
let watching = null

const { keys, storageModule } = shared.sharedFlowsStorage({
  client,
  prefix: PREFIX,
  log,
  before: follow,
  written: (version) => written.add(version.toString()),
  init: (r) => (runtime = r),
})

/** Another replica's deploy: load the flows again (Node-RED reads them from the storage). */
function follow() {
  watching ??= persistently(log, `watching ${keys.flows}`, () =>
    client.observe(keys.flows, (note) => {
      if (note.reconciled && note.operation !== 'SET') return
      if (note.version && written.delete(note.version.toString())) return
      log('flows deployed on another replica: loading them')
      runtime?.nodes?.loadFlows(true).catch((err) => log(`loading the flows failed: ${err.message}`))
    }),
  )
  return watching
}

module.exports = { ...base, storageModule }
