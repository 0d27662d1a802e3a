import type { IClientOptions } from 'mqtt'
import { mqttLogOption } from '../transport/mqtt-settings'
import { backoffDelay } from './backoff'
import { METRIC_CATEGORY_PROPERTY, type ResolvedOptions } from './options'
import { SAT_AUTH_METHOD } from './sat-token'

/**
 * The mqtt.js options of a connection with these resolved options. `satToken`: the K8S-SAT token
 * to authenticate with, undefined without one.
 */
export function mqttOptions(
  o: ResolvedOptions,
  ids: NonNullable<IClientOptions['messageIdProvider']>,
  satToken: Buffer | undefined,
): IClientOptions & { passphrase?: string } {
  const properties: NonNullable<IClientOptions['properties']> = {}
  if (o.sessionExpirySec !== undefined) properties.sessionExpiryInterval = o.sessionExpirySec
  if (o.metricCategory !== '') properties.userProperties = { [METRIC_CATEGORY_PROPERTY]: o.metricCategory }
  if (satToken) {
    properties.authenticationMethod = SAT_AUTH_METHOD
    properties.authenticationData = satToken
  }
  return {
    protocolVersion: 5,
    clientId: o.clientId,
    clean: o.cleanStart,
    keepalive: o.keepaliveSec,
    username: o.username,
    password: o.password,
    properties,
    reconnectPeriod: backoffDelay(0, o.reconnectMinMs, o.reconnectMaxMs),
    reconnectOnConnackError: true,
    connectTimeout: o.connectTimeoutMs,
    // We subscribe ourselves after every connect, so that we know when the SUBACK arrived.
    resubscribe: false,
    queueQoSZero: false,
    messageIdProvider: ids,
    ...mqttLogOption(),
    ...tlsRest(o.tls),
    // tls.connect takes a mixed array of CAs; mqtt.js types it more narrowly than it passes it on.
    ...(o.tls?.ca !== undefined ? { ca: o.tls.ca as IClientOptions['ca'] } : {}),
    // mqtt.js hands ca/cert/key/passphrase to the wss socket but not the server name.
    ...(o.tls?.servername !== undefined
      ? { wsOptions: { servername: o.tls.servername } as IClientOptions['wsOptions'] }
      : {}),
  }
}

function tlsRest(tls: ResolvedOptions['tls']): Omit<NonNullable<ResolvedOptions['tls']>, 'ca'> {
  if (!tls) return {}
  const { ca: _ca, ...rest } = tls
  return rest
}
