// Every node module of the package, for node-red-node-test-helper (docs/testing.md):
// `helper.load(require('node-red-contrib-aio-statestore/nodes'), flow)`. Node-RED itself loads the
// files package.json's `node-red.nodes` names, never this one.
import ssConfig from './ss-config'
import ssGet from './ss-get'
import ssSet from './ss-set'
import ssDel from './ss-del'
import ssLock from './ss-lock'
import ssUpdate from './ss-update'
import ssWatch from './ss-watch'

export = [ssConfig, ssGet, ssSet, ssDel, ssLock, ssUpdate, ssWatch]
