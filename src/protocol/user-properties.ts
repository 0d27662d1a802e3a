/** A PUBLISH's properties as mqtt.js gives them, as far as user properties go. */
export interface WithUserProperties {
  userProperties?: Record<string, string | string[]>
}

/**
 * One user property; when a name repeats, the first value counts. Own properties only: a name such as `__proto__` is
 * just a name.
 */
export function userProperty(properties: WithUserProperties | undefined, name: string): string | undefined {
  const all = properties?.userProperties
  if (!all || !Object.hasOwn(all, name)) return undefined
  const value = all[name]
  return Array.isArray(value) ? value[0] : value
}
