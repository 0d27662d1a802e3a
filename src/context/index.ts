/**
 * The module Node-RED loads for a context store:
 *
 *   contextStorage: {
 *     statestore: { module: require('node-red-contrib-aio-statestore/context'), config: { broker: 'mqtt://…' } },
 *   }
 *
 * Node-RED calls it with `config` and uses the Store API of what it returns (README, "Context store").
 */
import type { ContextStoreConfig } from './config'
import { StateStoreContext } from './state-store-context'

function statestoreContext(config?: ContextStoreConfig): StateStoreContext {
  return new StateStoreContext(config)
}
// Node-RED logs `module=<this>` when it loads the store.
statestoreContext.toString = () => 'node-red-contrib-aio-statestore/context'

// eslint-disable-next-line @typescript-eslint/no-namespace
namespace statestoreContext {
  export type Config = ContextStoreConfig
  export type Store = StateStoreContext
}

export = statestoreContext
