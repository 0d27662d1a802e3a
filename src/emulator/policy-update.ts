import type { AuthorizationPolicy } from './core/authorization-policy'

/**
 * The BrokerAuthorization in force, replaceable while the emulator runs, as a cluster's policy is
 * updated: every part that judges (the service, the broker's access policy, the admin channel)
 * holds this one object, which asks the policy of the moment.
 */
export class LivePolicy {
  private current: AuthorizationPolicy
  /** What the parts hold: always the policy in force. */
  readonly view: AuthorizationPolicy

  constructor(initial: AuthorizationPolicy) {
    this.current = initial
    this.view = new Proxy(initial, {
      get: (_target, key) => {
        const value = Reflect.get(this.current, key, this.current) as unknown
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(this.current) : value
      },
    })
  }

  replace(next: AuthorizationPolicy): void {
    this.current = next
  }
}
