import type { NodeAPI } from 'node-red'
import { setFlowsOf, shareConnection } from '../../src/function-nodes/shared-stores'
import type { StoreConfigNode } from './config-node'

/** The flows a node runs in: its flow's path, the tab first, then any subflow instances. */
function flowsOf(RED: NodeAPI, id: string): string[] | undefined {
  const node = RED.nodes.getNode(id) as unknown as { z?: string; _flow?: { path?: string } } | null
  if (!node) return undefined
  const path = node._flow?.path ?? node.z ?? ''
  return path.split('/').filter(Boolean)
}

/**
 * Offers a config node's connection to Function nodes (`stateStore(nameOrId)` of the package, in a
 * Function node's Modules), to those on its tab when it is scoped to one. The first use registers a
 * user, so a config node no palette node uses still connects; the offer is withdrawn and the user
 * leaves as the config node starts to close. Call it before the config node adds its own close
 * handler: Node-RED calls them in order, and the config node waits for its users to leave.
 */
export function shareForFunctions(RED: NodeAPI, node: StoreConfigNode): void {
  setFlowsOf((id) => flowsOf(RED, id))
  const user = { id: `${node.id}/function-nodes`, onConnection() {} }
  let registered = false
  const withdraw = shareConnection({
    id: node.id,
    name: node.name ?? '',
    scope: (node as { z?: string }).z ?? '',
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
