import type { NodeMessage } from 'node-red'

/** The key each msg in hand resolved to, for its failure's line in the sidebar; gone with the msg. */
const keys = new WeakMap<NodeMessage, string>()

export function rememberKey(msg: NodeMessage, key: string): void {
  keys.set(msg, key)
}

/** The key this msg resolved to, when it got that far. */
export function keyUsedBy(msg: NodeMessage): string | undefined {
  return keys.get(msg)
}
