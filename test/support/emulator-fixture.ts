/**
 * The set-up most client, fault and reliability suites share, declared once: a broker, the emulator
 * serving behind it, a TCP relay in front of it to cut, freeze or refuse connections, and a pool of
 * clients closed for the test. Called in a `describe`, `withEmulator` registers the hooks that start
 * these before the suite and stop them after it (clients after each test, or after the suite), in
 * reverse order, and returns a handle whose parts are there once the suite's `before` ran.
 *
 *   const fx = withEmulator({ broker: 'mosquitto', relay: true })
 *   it('…', async () => { const c = await fx.clients.ready(fx.relay.url) … })
 */
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator'
import { startMqttBroker, type OwnBroker } from './broker'
import { ClientPool } from './clients'
import { Mosquitto, requireMosquitto, type MosquittoOptions } from './mosquitto'
import { TcpRelay } from './relay'

export interface EmulatorSetup {
  /**
   * The broker the emulator serves behind: `'embedded'` (the default), the emulator's own on a free
   * port; `'own'`, a broker of the suite's own (mosquitto, or the embedded broker alone where
   * mosquitto is absent outside CI); `'mosquitto'`, a mosquitto process of the suite's own, to kill
   * and restart (skipped without mosquitto, a failure in CI).
   */
  broker?: 'embedded' | 'own' | 'mosquitto'
  /** With `broker: 'mosquitto'`: its options (extra configuration). */
  mosquitto?: MosquittoOptions
  /** A TCP relay in front of the broker. */
  relay?: boolean
  /** When the pool's clients close: after each test (the default) or after the suite. */
  clients?: 'each' | 'suite'
  /** The emulator's options; where it serves is the fixture's. */
  emulator?: Omit<EmulatorOptions, 'brokerUrl' | 'listen'>
}

export interface EmulatorFixture {
  /** The broker of the suite's own (`broker: 'own'` or `'mosquitto'`). */
  readonly broker: OwnBroker
  /** The same, as the mosquitto process it is (`broker: 'mosquitto'`). */
  readonly mosquitto: Mosquitto
  readonly emulator: Emulator
  /** `relay: true`. */
  readonly relay: TcpRelay
  readonly clients: ClientPool
  /** The broker's URL, as clients reach it directly. */
  readonly url: string
}

export function withEmulator(setup: EmulatorSetup = {}): EmulatorFixture {
  const kind = setup.broker ?? 'embedded'
  const clients = new ClientPool()
  let broker: OwnBroker | null = null
  let emulator: Emulator | null = null
  let relay: TcpRelay | null = null

  before(async function () {
    if (kind === 'mosquitto') {
      requireMosquitto(this)
      broker = await Mosquitto.start(setup.mosquitto)
    } else if (kind === 'own') broker = await startMqttBroker(this)
    emulator = await startEmulator({
      logLevel: 'error',
      ...setup.emulator,
      ...(broker ? { brokerUrl: broker.url } : { listen: { host: '127.0.0.1', port: 0 } }),
    })
    if (setup.relay) relay = await TcpRelay.start(broker ? broker.url : emulator.brokerUrl)
  })
  if ((setup.clients ?? 'each') === 'each') {
    afterEach(async () => {
      // A test that cut or froze the relay leaves it passing again for the next.
      relay?.thaw()
      relay?.restore()
      await clients.closeAll()
    })
  }
  after(async () => {
    relay?.thaw()
    await clients.closeAll()
    await emulator?.stop()
    await relay?.stop()
    await broker?.stop()
  })

  const started = <T>(part: T | null, what: string): T => {
    if (part === null) throw new Error(`withEmulator: no ${what} (not asked for, or the suite's before has not run)`)
    return part
  }
  return {
    get broker() {
      return started(broker, 'broker of its own')
    },
    get mosquitto() {
      const own = started(broker, 'broker of its own')
      if (!(own instanceof Mosquitto))
        throw new Error("withEmulator: the broker is not mosquitto (ask for broker: 'mosquitto')")
      return own
    },
    get emulator() {
      return started(emulator, 'emulator')
    },
    get relay() {
      return started(relay, 'relay')
    },
    clients,
    get url() {
      return broker ? broker.url : started(emulator, 'emulator').brokerUrl
    },
  }
}
