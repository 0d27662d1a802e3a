/*
 * The hooks through which a service that runs the broker gives it its rules: who may connect,
 * publish and subscribe (AccessPolicy) and what clients may publish (PublishPolicy). The broker
 * itself knows no state store topic.
 */

/** Who a connected client is, as this broker authenticated it: what access rules match. */
export interface ConnectedClient {
  clientId: string
  username?: string
  attributes?: Readonly<Record<string, string>>
}

/** An access rule's answer; `reason` says, for the log, which rule allowed it or why nothing did. */
export interface AccessVerdict {
  allowed: boolean
  reason: string
}

/**
 * Who may connect, publish and subscribe, given to the broker by the service that runs it (the
 * state store emulator's, from a BrokerAuthorization, is in service/broker-policy.ts). Refusals are
 * answered as the AIO broker answers: CONNACK, PUBACK and SUBACK 0x87 (not authorized).
 */
export interface AccessPolicy {
  connect(client: ConnectedClient): AccessVerdict
  publish(client: ConnectedClient, topic: string): AccessVerdict
  subscribe(client: ConnectedClient, filter: string): AccessVerdict
  /**
   * Whether a service that serves `topic` may answer this client's PUBLISH there on its Response
   * Topic: the service publishes with its own rights, so it asks on the requester's behalf. Absent,
   * or for a topic no service of the broker serves, the answer is no one's business but the
   * responder's (an ordinary executor publishes its answers with its own rights).
   */
  answer?(client: ConnectedClient, topic: string, responseTopic: string): AnswerVerdict
}

/** An answer refused names, besides why, the rule the policy lacks (for the log, once). */
export interface AnswerVerdict extends AccessVerdict {
  missing?: string
}

/** A client's PUBLISH as a publish policy sees it: its properties may be amended in place. */
export interface InspectedPublish {
  topic: string
  properties?: { responseTopic?: string; userProperties?: Record<string, string | string[]> }
}

/**
 * A service's rules for what clients publish, given to the broker by the service that runs it (the
 * state store emulator's are in service/broker-policy.ts); the broker itself knows no topic but `$SYS/`.
 */
export interface PublishPolicy {
  /**
   * Judges a client's PUBLISH before it is routed, and may amend its properties in place. A reason
   * disconnects the client (reason code 0x90, Topic Name invalid) and drops the message; null lets it through.
   */
  inspect(clientId: string, packet: InspectedPublish): string | null
  /**
   * Topics the service alone publishes to: a reason refuses a client's PUBLISH there as not
   * authorized (as the access policy does); never asked about the service's own connections.
   */
  serviceOnly?(topic: string): string | null
}
