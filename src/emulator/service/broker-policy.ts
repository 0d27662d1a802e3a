import { notificationFilter, Prop, REQUEST_TOPICS, responseTopicRefusal } from '../../protocol'
import { ADMIN_REQUEST_TOPIC } from '../core/admin-topics'
import type {
  AccessPolicy,
  AccessVerdict,
  AnswerVerdict,
  ConnectedClient,
  InspectedPublish,
  PublishPolicy,
} from '../broker/hooks'
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
    if (refusal)
      return (
        `the Response Topic of a state store request may not be ` +
        `${JSON.stringify(responseTopic!.slice(0, 200))}: ${refusal}`
      )
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
 * notifications needs no Subscribe rule, since KEYNOTIFY already needed Read on the key; and the
 * service answers a request (state store or admin) on its Response Topic only as answerTo says.
 */
export function stateStoreAccessPolicy(policy: AuthorizationPolicy): AccessPolicy {
  const verdict = (decision: Decision, client: ConnectedClient, what: string): AccessVerdict =>
    decision.allowed
      ? { allowed: true, reason: `by ${decision.rule}` }
      : { allowed: false, reason: `no authorization rule gives ${describePrincipal(client)} ${what}` }
  return {
    connect: (client) => verdict(policy.decideConnect(client), client, 'Connect'),
    publish: (client, topic) =>
      REQUEST_TOPICS.includes(topic) ? SERVED : verdict(policy.decidePublish(client, topic), client, 'Publish to it'),
    subscribe: (client, filter) =>
      ownNotifications(client.clientId, filter)
        ? SERVED
        : verdict(policy.decideSubscribe(client, filter), client, 'Subscribe to it'),
    answer: (client, topic, responseTopic) =>
      SERVED_TOPICS.includes(topic) ? answerTo(policy, client, responseTopic) : ANSWERED,
  }
}

const SERVED_TOPICS: readonly string[] = [...REQUEST_TOPICS, ADMIN_REQUEST_TOPIC]
const ANSWERED: AnswerVerdict = { allowed: true, reason: 'not a request to the service' }

/**
 * Where the service answers a client. AIO asks of a state store client Publish on the request
 * topic and Subscribe on its Response Topic, nothing more (docs/security.md has the sources): a
 * client must be able to read its answer. The service publishes with its own rights, so the
 * answer must not carry bytes of the client's choosing where the client could not write itself
 * (a confused deputy: `telemetry/line-1`). So it goes to a topic the client may subscribe to that is
 * - one of the service's own answer topics, where no client may publish; or
 * - under the client's own `clients/<client id>/` (the SDKs' prefix, ADR 14; a client id without
 *   `/`, `+` or `#`, so that it names one level), which only hurts the client itself; or
 * - a topic the client may publish to as well.
 */
export function answerTo(policy: AuthorizationPolicy, client: ConnectedClient, responseTopic: string): AnswerVerdict {
  const reads = policy.decideSubscribe(client, responseTopic)
  if (!reads.allowed)
    return {
      allowed: false,
      reason:
        `no authorization rule gives ${describePrincipal(client)} Subscribe to it, so it could not read its ` +
        `answer`,
      missing:
        `brokerResources: [{ method: Subscribe, topics: ` +
        `[${JSON.stringify(ownSpace(client.clientId) ?? responseTopic)}] }]`,
    }
  if (serviceTopicRefusal(responseTopic) !== null)
    return { allowed: true, reason: `an answer topic of the service's, by ${reads.rule}` }
  const own = ownSpace(client.clientId)
  if (own !== null && responseTopic.startsWith(own.slice(0, -1)))
    return { allowed: true, reason: `under the client's own ${own}, by ${reads.rule}` }
  const writes = policy.decidePublish(client, responseTopic)
  if (writes.allowed) return { allowed: true, reason: `it may publish there too, by ${writes.rule}` }
  return {
    allowed: false,
    reason:
      `it is outside clients/<its client id>/ and no authorization rule gives ${describePrincipal(client)} ` +
      `Publish to it: the service would write there for it`,
    missing:
      `brokerResources: [{ method: Publish, topics: [${JSON.stringify(responseTopic)}] }], or use a Response ` +
      `Topic under ${own ?? 'clients/<client id>/'}`,
  }
}

/** `clients/<client id>/#`, or null for a client id that does not name one topic level. */
function ownSpace(clientId: string): string | null {
  return clientId === '' || /[/+#]/.test(clientId) ? null : `clients/${clientId}/#`
}

const SERVED: AccessVerdict = { allowed: true, reason: 'the state store judges it' }

function ownNotifications(clientId: string, filter: string): boolean {
  const own = notificationFilter(clientId)
  return filter === own || (filter.startsWith(own.slice(0, -1)) && !/[+#]/.test(filter.slice(own.length - 1)))
}
