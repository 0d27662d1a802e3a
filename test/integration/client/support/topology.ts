import { startEmulator, type Emulator } from '../../../../src/emulator'
import { mqttBrokerUrl } from '../../../support/broker'

export interface Topology {
  /** Where clients connect. */
  url: string
  /** The broker's TCP port, for a Proxy in front of it. */
  port: number
  emulator: Emulator
  kind: 'mosquitto' | 'embedded'
}

/**
 * Runs `body` twice: against the emulator served through mosquitto, and through the emulator's
 * embedded broker. The topology is filled in by a before hook and torn down after.
 */
export function onEveryBroker(title: string, body: (t: Topology) => void): void {
  for (const kind of ['mosquitto', 'embedded'] as const) {
    describe(`${title} (${kind === 'mosquitto' ? 'emulator over mosquitto' : 'emulator with its embedded broker'})`, function () {
      const t = {} as Topology
      before(async function () {
        t.kind = kind
        if (kind === 'mosquitto') {
          const url = await mqttBrokerUrl(this)
          t.emulator = await startEmulator({ brokerUrl: url, logLevel: 'error' })
          t.url = url
        } else {
          t.emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
          t.url = t.emulator.brokerUrl
        }
        t.port = Number(new URL(t.url).port)
      })
      after(async () => {
        await t.emulator?.stop()
      })
      body(t)
    })
  }
}
