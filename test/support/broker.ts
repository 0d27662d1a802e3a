import { startBroker, type EmbeddedBroker } from '../../src/emulator'
import { Mosquitto, mosquittoPath } from './mosquitto'

let shared: Mosquitto | null = null
let standalone: EmbeddedBroker | null = null

/**
 * In mocha's parallel mode (a worker has MOCHA_WORKER_ID) spec files run side by side, and the
 * emulators of two of them on one broker would serve one topic space: each worker has a mosquitto
 * of its own for its whole life, configured as CI's, instead of MQTT_URL's.
 */
const inParallelWorker = process.env.MOCHA_WORKER_ID !== undefined

/**
 * The URL of a real MQTT 5 broker for integration tests: MQTT_URL when set (CI starts mosquitto),
 * otherwise a mosquitto started for this test run. Without mosquitto the suite is skipped with a
 * message on a laptop, and fails in CI.
 */
export async function mosquittoUrl(ctx: Mocha.Context): Promise<string> {
  if (process.env.MQTT_URL && !inParallelWorker) return process.env.MQTT_URL
  if (!shared) {
    if (!mosquittoPath()) {
      if (process.env.CI) throw new Error('CI must provide mosquitto (MQTT_URL or the mosquitto binary)')
      console.warn('      (skipped: mosquitto is not installed; apt-get install mosquitto to run these tests)')
      ctx.skip()
    }
    shared = await Mosquitto.start()
    if (inParallelWorker) shared.killOnExit()
  }
  return shared.url
}

/**
 * The URL of an MQTT 5 broker of another process's kind, for tests that need only that (an emulator
 * or a responder behind an external broker, clients of it): mosquitto as mosquittoUrl gives it, and
 * where mosquitto is absent outside CI our embedded broker alone (no state store policy), so that
 * these tests run on a laptop too instead of skipping. CI still runs them against mosquitto.
 */
export async function mqttBrokerUrl(ctx: Mocha.Context): Promise<string> {
  if (process.env.MQTT_URL || mosquittoPath() || process.env.CI) return mosquittoUrl(ctx)
  if (!standalone) {
    console.warn('      (mosquitto is not installed: the embedded broker, alone, stands in for it)')
    standalone = await startBroker({ port: 0 })
  }
  return standalone.url
}

after(async () => {
  if (!inParallelWorker) await shared?.stop()
  if (!inParallelWorker) shared = null
  await standalone?.stop()
  standalone = null
})

/** A broker of a test's own, whichever kind startMqttBroker found. */
export interface OwnBroker {
  readonly url: string
  readonly port: number
  stop(): Promise<void>
}

/**
 * A fresh MQTT 5 broker of the test's own, for tests that need only that: mosquitto in a process of
 * its own, or, where mosquitto is absent outside CI, our embedded broker alone (no state store
 * policy), as mqttBrokerUrl decides.
 */
export async function startMqttBroker(ctx: Mocha.Context): Promise<OwnBroker> {
  if (mosquittoPath() || process.env.CI) {
    await mosquittoUrl(ctx)
    return Mosquitto.start()
  }
  return startBroker({ port: 0 })
}
