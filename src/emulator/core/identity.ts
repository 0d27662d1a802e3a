import { Prop } from '../../protocol'

/**
 * Who sent a request, as far as the service can stand behind it: the MQTT client id, which names
 * the client's notification topic and is what authorization rules match.
 *
 * `__srcId` is where every SDK puts its client id (and the embedded broker overwrites it with the
 * connection's, so it cannot be forged there); `$partition` and `.NET`'s `__invId` carry the same id.
 * Without any of them, the level after `clients/` in the response topic is the client id by the
 * convention every SDK and the article follow. Anything else (`replies/for/me`) names no client:
 * null, never a guess, so that no registration is made for a client id nobody has.
 */
export function callerOf(prop: (name: string) => string | undefined, responseTopic: string | undefined): string | null {
  for (const name of [Prop.sourceId, Prop.partition, Prop.invokerId]) {
    const v = prop(name)
    if (v) return v
  }
  const levels = responseTopic?.split('/') ?? []
  if (levels[0] === 'clients' && levels[1]) return levels[1]
  return null
}

/** The caller for a log line. */
export function describeCaller(clientId: string | null, responseTopic: string | undefined): string {
  if (clientId !== null) return `client ${JSON.stringify(clientId)}`
  return `an unidentified client (response topic ${JSON.stringify((responseTopic ?? '').slice(0, 200))})`
}
