import { Prop, REQUEST_TOPICS, responseTopicRefusal } from '../../protocol'
import type { InspectedPublish, PublishPolicy } from '../broker/broker'

/**
 * The state store's rules for the embedded broker, which knows who is connected where the service
 * only reads a request's properties:
 * - the article: "The state store disconnects MQTT clients that use an invalid response topic";
 * - the service knows a caller by its request's `__srcId` (authorization rules, notifications), so
 *   the broker sets it to the connection's client id: a client cannot claim to be someone else.
 */
export const stateStorePublishPolicy: PublishPolicy = {
  inspect(clientId: string, packet: InspectedPublish): string | null {
    if (!REQUEST_TOPICS.includes(packet.topic)) return null
    const responseTopic = packet.properties?.responseTopic
    const refusal = responseTopic ? responseTopicRefusal(responseTopic) : null
    if (refusal) return `the Response Topic of a state store request may not be ${JSON.stringify(responseTopic!.slice(0, 200))}: ${refusal}`
    // Set in place: the packet was parsed for this publish alone, so a copy per request buys nothing.
    const properties = (packet.properties ??= {})
    ;(properties.userProperties ??= {})[Prop.sourceId] = clientId
    return null
  },
}
