import { shareConnection } from '../../src/shared-stores'
import type { StoreConfigNode } from './config-node'

/**
 * Offers a config node's connection to Function nodes (`stateStore(nameOrId)` of the package, in a
 * Function node's Modules). The first use registers a user, so a config node no palette node uses
 * still connects; the offer is withdrawn and the user leaves as the config node starts to close.
 * Call it before the config node adds its own close handler: Node-RED calls them in order, and the
 * config node waits for its users to leave.
 */
export function shareForFunctions(node: StoreConfigNode): void {
  const user = { id: `${node.id}/function-nodes`, onConnection() {} }
  let registered = false
  const withdraw = shareConnection({
    id: node.id,
    name: node.name ?? '',
    get status() {
      return node.connection
    },
    client() {
      if (!registered) {
        registered = true
        node.register(user)
      }
      return node.started()
    },
  })
  node.on('close', () => {
    withdraw()
    if (registered) void node.deregister(user, false)
  })
}
