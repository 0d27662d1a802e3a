import { notificationFilter, Prop, REQUEST_TOPICS, responseTopicRefusal } from '../../protocol'
import type { AccessPolicy, AccessVerdict, ConnectedClient, InspectedPublish, PublishPolicy } from '../broker/hooks'
import type { AuthorizationPolicy, Decision } from '../core/authorization-policy'
import { describePrincipal } from '../core/principal'
import { serviceTopicRefusal } from './service-topics'

/**
 * The state store's rules for the embedded broker, which knows who is connected where the service
 * only reads a request's properties:
 * - the article: "The state store disconnects MQTT clients that use an invalid response topic";
 * - the service knows a caller by its request's `__srcId` (authorization rules, notifications), so
 *   the broker sets it to the connection's client id: a client cannot claim to be someone else;
 * - notifications and answers come from the service alone: no client publishes to those topics.
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
  serviceOnly: serviceTopicRefusal,
}

/**
 * A BrokerAuthorization as the embedded broker's access policy, with what it leaves to the state
 * store (the emulator's choice where the AIO docs are silent, see docs/emulator.md): a request is
 * judged key by key by `stateStoreResources`, and a client's subscription to its own key
 * notifications needs no Subscribe rule, since KEYNOTIFY already needed Read on the key.
 */
export function stateStoreAccessPolicy(policy: AuthorizationPolicy): AccessPolicy {
  const verdict = (decision: Decision, client: ConnectedClient, what: string): AccessVerdict =>
    decision.allowed
      ? { allowed: true, reason: `by ${decision.rule}` }
      : { allowed: false, reason: `no authorization rule gives ${describePrincipal(client)} ${what}` }
  return {
    connect: (client) => verdict(policy.decideConnect(client), client, 'Connect'),
    publish: (client, topic) => (REQUEST_TOPICS.includes(topic) ? SERVED : verdict(policy.decidePublish(client, topic), client, 'Publish to it')),
    subscribe: (client, filter) =>
      ownNotifications(client.clientId, filter) ? SERVED : verdict(policy.decideSubscribe(client, filter), client, 'Subscribe to it'),
  }
}

const SERVED: AccessVerdict = { allowed: true, reason: 'the state store judges it' }

function ownNotifications(clientId: string, filter: string): boolean {
  const own = notificationFilter(clientId)
  return filter === own || (filter.startsWith(own.slice(0, -1)) && !/[+#]/.test(filter.slice(own.length - 1)))
}
