import type { ConnectionStatus } from '../../src/client'
import type { StoreUser } from './config-node'

/**
 * The nodes that use one config node: each hears of every connection change, and a closing config node can wait for
 * them to leave.
 */
export class StoreUsers {
  private readonly users = new Map<string, StoreUser>()
  private allGone: (() => void) | null = null

  get size(): number {
    return this.users.size
  }

  add(user: StoreUser): void {
    this.users.set(user.id, user)
  }

  /** True when it was the last user. */
  remove(user: StoreUser): boolean {
    this.users.delete(user.id)
    if (this.users.size > 0) return false
    this.allGone?.()
    return true
  }

  tell(status: ConnectionStatus): void {
    for (const user of this.users.values()) user.onConnection(status)
  }

  /** Resolves once every user has left, or after graceMs, whichever comes first. */
  async left(graceMs: number): Promise<void> {
    if (this.users.size === 0) return
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>((resolve) => {
      this.allGone = resolve
      timer = setTimeout(resolve, graceMs)
    })
    clearTimeout(timer)
    this.allGone = null
  }
}
