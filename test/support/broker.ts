import { Mosquitto, mosquittoPath } from './mosquitto'

let shared: Mosquitto | null = null

/**
 * The URL of a real MQTT 5 broker for integration tests: MQTT_URL when set (CI starts mosquitto),
 * otherwise a mosquitto started for this test run. Without mosquitto the suite is skipped with a
 * message on a laptop, and fails in CI.
 */
export async function mosquittoUrl(ctx: Mocha.Context): Promise<string> {
  if (process.env.MQTT_URL) return process.env.MQTT_URL
  if (!shared) {
    if (!mosquittoPath()) {
      if (process.env.CI) throw new Error('CI must provide mosquitto (MQTT_URL or the mosquitto binary)')
      console.warn('      (skipped: mosquitto is not installed; apt-get install mosquitto to run these tests)')
      ctx.skip()
    }
    shared = await Mosquitto.start()
  }
  return shared.url
}

after(async () => {
  await shared?.stop()
  shared = null
})
