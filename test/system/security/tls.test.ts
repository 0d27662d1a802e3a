/**
 * TLS against mosquitto with a CA and certificates made by the test (openssl): the client verifies
 * the server (CA only) and does mutual TLS (client certificate, `require_certificate true`); a
 * server signed by another CA is refused, and both the client status and the Node-RED node status
 * say so. The nodes take their certificates from Node-RED's own tls-config node. (The client's
 * other TLS options are covered in test/system/client/transports.test.ts.)
 */
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { StateStoreClient, type ConnectionStatus } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { freePort } from '../../../dev/ports'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { ALL, helper, lastStatus, nextMessage, onTab, statuses } from '../../integration/nodes/support'
import { until } from '../../support/wait'
import { makeCerts, tlsListener, type TestCerts } from '../../support/certs'
import { coreNode } from './support'

describe('security: TLS with mosquitto', function () {
  this.timeout(30_000)
  let pki: TestCerts
  let broker: Mosquitto
  let emulator: Emulator
  let serverTls: string
  let mutualTls: string
  const clients: StateStoreClient[] = []

  before(async function () {
    requireMosquitto(this)
    pki = makeCerts()
    const [plain, server, mutual] = [await freePort(), await freePort(), await freePort()]
    broker = await Mosquitto.start({
      port: plain,
      extraConfig: [
        `listener ${plain} 127.0.0.1`,
        'allow_anonymous true',
        ...tlsListener(server, pki),
        ...tlsListener(mutual, pki),
        'require_certificate true',
      ],
    })
    serverTls = `mqtts://127.0.0.1:${server}`
    mutualTls = `mqtts://127.0.0.1:${mutual}`
    emulator = await startEmulator({ brokerUrl: broker.url, logLevel: 'error' })
  })
  after(async () => {
    await helper.unload()
    await Promise.all(clients.map((c) => c.close()))
    await emulator?.stop()
    await broker?.stop()
    if (pki) rmSync(pki.dir, { recursive: true, force: true })
  })

  function client(
    url: string,
    tls: ConstructorParameters<typeof StateStoreClient>[0]['tls'],
    id: string,
  ): StateStoreClient {
    const c = new StateStoreClient({
      brokerUrl: url,
      clientId: `${id}-${process.pid}`,
      tls,
      reconnectMinMs: 200,
      reconnectMaxMs: 1000,
    })
    clients.push(c)
    return c
  }

  function firstRefusal(c: StateStoreClient): Promise<ConnectionStatus> {
    return new Promise((resolve) => {
      const check = (s: ConnectionStatus) => {
        if (s.state === 'connected') resolve(s)
        if (s.state === 'disconnected' && s.reason) {
          c.off('status', check)
          resolve(s)
        }
      }
      c.on('status', check)
    })
  }

  it('client: verifies the server, does mutual TLS, and refuses a server it cannot verify with a clear status', async () => {
    const verified = client(serverTls, { ca: pki.ca }, 'tls-verified')
    await verified.ready({ timeoutMs: 5000 })
    assert.equal((await verified.set('tls/one', 'secret stuff')).applied, true)

    const mutual = client(mutualTls, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey }, 'tls-mutual')
    await mutual.ready({ timeoutMs: 5000 })
    assert.equal((await mutual.get('tls/one')).value?.toString(), 'secret stuff')

    const wrongCa = client(serverTls, { ca: pki.otherCa }, 'tls-wrong-ca')
    const refused = await firstRefusal(wrongCa)
    assert.equal(refused.state, 'disconnected')
    assert.match(refused.reason ?? '', /certificate/i)
    await assert.rejects(wrongCa.get('tls/one', { timeoutMs: 300 }), { name: 'TimeoutError' })

    const noClientCert = client(mutualTls, { ca: pki.ca }, 'tls-no-client-cert')
    const dropped = await firstRefusal(noClientCert)
    assert.equal(dropped.state, 'disconnected', 'the broker does not take a client without a certificate')
    assert.ok(dropped.reason)
  })

  it('nodes: tls-config supplies the CA and client certificate; a wrong CA shows as disconnected with the reason', async () => {
    const tls = coreNode('network/05-tls.js')
    await helper.load(
      [...ALL, tls],
      [
        { id: 'tab', type: 'tab', label: 'tls' },
        {
          id: 'tlsGood',
          type: 'tls-config',
          ca: pki.caFile,
          cert: pki.clientCertFile,
          key: pki.clientKeyFile,
          verifyservercert: true,
        },
        { id: 'tlsWrong', type: 'tls-config', ca: pki.otherCaFile, verifyservercert: true },
        { id: 'cfgMutual', type: 'ss-config', broker: mutualTls, tls: 'tlsGood', requestTimeout: '2000' },
        { id: 'cfgWrong', type: 'ss-config', broker: serverTls, tls: 'tlsWrong', requestTimeout: '1000' },
        onTab({ id: 'good', type: 'ss-get', store: 'cfgMutual', key: 'topic', keyType: 'msg', wires: [['goodOut']] }),
        onTab({ id: 'goodOut', type: 'helper' }),
        onTab({ id: 'wrong', type: 'ss-get', store: 'cfgWrong', key: 'topic', keyType: 'msg', wires: [['wrongOut']] }),
        onTab({ id: 'wrongOut', type: 'helper' }),
        onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
        onTab({ id: 'caught', type: 'helper' }),
      ],
    )
    const good = helper.getNode('good')
    const wrong = helper.getNode('wrong')
    await until(() => lastStatus(good).fill === 'green', 'the mutual-TLS node to connect')
    const read = nextMessage(helper.getNode('goodOut'))
    good.receive({ topic: 'tls/one' })
    assert.equal((await read).payload, 'secret stuff')

    await until(
      () => lastStatus(wrong).fill === 'red' && /certificate/i.test(String(lastStatus(wrong).text)),
      `the wrong-CA node to show why: ${JSON.stringify(lastStatus(wrong))}`,
    )
    assert.ok(!statuses(wrong).some((s) => s.fill === 'green'), 'never shown as connected')
    // The msg waits for the connection its whole request timeout (3 s here) before it fails.
    const caught = nextMessage(helper.getNode('caught'), 10_000)
    wrong.receive({ topic: 'tls/one', keep: true })
    const c = await caught
    assert.equal((c.error as { code: string }).code, 'NotConnected')
    assert.equal(c.keep, true)
  })
})
