import { startEmulator } from '../../../src/emulator'
import { mqttBrokerUrl } from '../../support/broker'
import { behaviourSuite } from './behaviour'

// The same behaviour, through an ordinary broker the emulator connects to and through its own.
behaviourSuite(
  'mosquitto',
  async (ctx, options) => startEmulator({ ...options, brokerUrl: await mqttBrokerUrl(ctx) }),
  'external',
)
behaviourSuite(
  'the embedded aedes broker',
  async (_ctx, options) => startEmulator({ ...options, listen: { port: 0 } }),
  'embedded',
)
