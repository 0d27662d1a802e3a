import { randomBytes } from 'node:crypto'
import { shownUrl } from '../../diagnostics/log'
import type { Duplex } from 'node:stream'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { mqttLogOption, setNoDelay } from '../../transport/mqtt-settings'
import { storeWithoutCopy } from '../../transport/store-without-copy'
import { writeWholePackets } from '../../transport/whole-packets'

/** How the emulator's own MQTT clients (the service's, the admin channel's) reach the broker. */
export interface EmulatorBrokerOptions {
  brokerUrl: string
  username?: string
  password?: string
  connectTimeoutMs?: number
  /** Connects through this stream (a broker in this process) instead of to `brokerUrl`. */
  connectStream?: () => Duplex
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

/**
 * One clean-session MQTT 5 client with a random id under `clientIdPrefix`, with TCP_NODELAY on
 * every (re)connect. Its subscriptions are made again after every reconnect (mqtt.js's
 * `resubscribe`, on by default), as a clean session loses them.
 */
export function emulatorMqttClient(options: EmulatorBrokerOptions, clientIdPrefix: string): MqttClient {
  const clientOptions: IClientOptions = {
    protocolVersion: 5,
    clientId: `${clientIdPrefix}-${randomBytes(6).toString('hex')}`,
    clean: true,
    keepalive: 30,
    reconnectPeriod: 1000,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    ...(options.username !== undefined ? { username: options.username } : {}),
    ...(options.password !== undefined ? { password: options.password } : {}),
    ...mqttLogOption(),
  }
  const connectStream = options.connectStream
  const client = connectStream
    ? new mqtt.MqttClient(() => connectStream(), clientOptions)
    : mqtt.connect(options.brokerUrl, clientOptions)
  client.on('connect', () => setNoDelay(client.stream))
  storeWithoutCopy(client)
  writeWholePackets(client)
  return client
}

/**
 * Resolves at the first CONNACK; a refused CONNECT or an unreachable broker rejects instead of
 * being retried forever. `label` prefixes the timeout's message ("admin channel: ").
 */
export function firstConnect(client: MqttClient, options: EmulatorBrokerOptions, label = ''): Promise<void> {
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        done(new Error(`${label}no answer from the broker at ${shownUrl(options.brokerUrl)} within ${timeoutMs} ms`)),
      timeoutMs,
    )
    const onError = (err: Error) => done(err)
    const onConnect = () => done(null)
    const done = (err: Error | null) => {
      clearTimeout(timer)
      client.off('error', onError)
      client.off('connect', onConnect)
      if (err) reject(err)
      else resolve()
    }
    client.on('error', onError)
    client.on('connect', onConnect)
  })
}
