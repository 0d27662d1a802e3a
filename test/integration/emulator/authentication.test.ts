import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import mqtt from 'mqtt'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  authenticateSat,
  parseDn,
  satIdentity,
  x509Attributes,
  type X509AttributeRule,
} from '../../../src/emulator/broker/authentication'
import { takeoverRefusal } from '../../../src/emulator/broker/client-id-owner'
import { authenticationSources } from '../../../src/emulator/core/authentication-documents'
import { ResourceError } from '../../../src/emulator/core/resource-error'
import { startBroker } from '../../../src/emulator/broker/broker'
import { prepareDevLayout } from '../../../src/emulator/dev-layout'

describe('emulator: who an authenticated client is (X.509 subjects, SAT token files)', () => {
  const rules: X509AttributeRule[] = [
    { subject: 'CN = Contoso Root CA Cert, OU = Engineering, C = US', attributes: { organization: 'contoso' } },
    { subject: 'CN = Contoso Intermediate CA', attributes: { city: 'seattle' } },
    { subject: 'CN = smart-fan', attributes: { building: '17' } },
  ]

  it('reads a distinguished name as AIO writes it', () => {
    assert.deepEqual(parseDn('CN = Contoso Root CA Cert, OU = Engineering, C = US'), {
      CN: 'Contoso Root CA Cert',
      OU: 'Engineering',
      C: 'US',
    })
  })

  it('gives the attributes of the first certificate from the leaf up its chain that a rule names, and no more', () => {
    const leaf = { subject: { CN: 'smart-fan' } }
    const intermediate = { subject: { CN: 'Contoso Intermediate CA' } }
    const root = { subject: { CN: 'Contoso Root CA Cert', OU: 'Engineering', C: 'US' } }
    assert.deepEqual(x509Attributes([leaf, intermediate, root] as never, rules), { building: '17' })
    assert.deepEqual(x509Attributes([{ subject: { CN: 'other-device' } }, intermediate, root] as never, rules), {
      city: 'seattle',
    })
    assert.equal(
      x509Attributes([{ subject: { CN: 'smart-fan', O: 'Fabrikam' } }] as never, rules),
      null,
      'a subject with more fields is another subject',
    )
  })

  it('accepts a SAT token that a token file holds now, read at every CONNECT', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sat-files-'))
    try {
      const file = join(dir, 'token')
      writeFileSync(file, 'first\n')
      const files = [{ file, attributes: { group: 'node-red' } }]
      assert.deepEqual(authenticateSat('first', files), {
        ok: true,
        identity: { kind: 'service account', name: `the token of ${file}` },
        attributes: { group: 'node-red' },
      })
      writeFileSync(file, 'second')
      assert.equal(authenticateSat('first', files).ok, false, 'the old token no longer')
      assert.equal(authenticateSat('second', files).ok, true)
      assert.equal(authenticateSat(undefined, files).ok, false)
      assert.equal(authenticateSat('second', [{ file: join(dir, 'missing') }]).ok, false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('knows a service account token by its subject across rotations; a token without one by its file, or by itself', () => {
    const jwt = (claims: object, signature: string) =>
      `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`
    const sub = 'system:serviceaccount:azure-iot-operations:node-red'
    const before = satIdentity(jwt({ sub, exp: 1 }, 'first'))
    const rotated = satIdentity(jwt({ sub, exp: 2 }, 'second'))
    assert.deepEqual(before, { kind: 'service account', name: sub })
    assert.equal(takeoverRefusal('node-red-0', before, rotated), null, 'a rotated token is the same service account')
    const other = satIdentity(jwt({ sub: 'system:serviceaccount:default:intruder' }, 'x'))
    assert.match(takeoverRefusal('node-red-0', before, other) ?? '', /in use by another identity/)
    assert.deepEqual(satIdentity('dev.abc', '/dev/.session/token.txt'), {
      kind: 'service account',
      name: 'the token of /dev/.session/token.txt',
    })
    assert.notDeepEqual(satIdentity('token-one'), satIdentity('token-two'))
    assert.deepEqual(satIdentity('token-one'), satIdentity('token-one'))
    assert.equal(satIdentity('a.not-json.c').name.startsWith('token '), true, 'a token that only looks like a JWT')
  })

  it("reads BrokerAuthentication attributes and a ServiceAccount's aio-broker-auth/ annotations; a bad entry names its field", () => {
    const sources = authenticationSources([
      {
        kind: 'ServiceAccount',
        metadata: { name: 'node-red', annotations: { 'aio-broker-auth/group': 'node-red', other: 'x' } },
      },
      {
        kind: 'BrokerAuthentication',
        spec: {
          authenticationMethods: [
            {
              method: 'X509',
              x509Settings: {
                authorizationAttributes: { fan: { subject: 'CN = smart-fan', attributes: { building: 17 } } },
              },
            },
          ],
        },
      },
    ])
    assert.deepEqual(sources, {
      x509: [{ subject: 'CN = smart-fan', attributes: { building: '17' } }],
      serviceAccountAttributes: { group: 'node-red' },
    })
    assert.throws(
      () =>
        authenticationSources([
          {
            kind: 'BrokerAuthentication',
            spec: {
              authenticationMethods: [{ x509Settings: { authorizationAttributes: { fan: { attributes: {} } } } }],
            },
          },
        ]),
      (err: unknown) =>
        err instanceof ResourceError &&
        err.path.join('.') === 'spec.authenticationMethods.0.x509Settings.authorizationAttributes.fan.subject',
    )
  })
})

describe("emulator: a client's principal outlives its connection for its requests still on their way", function () {
  this.timeout(20_000)

  // The rehearsal (test/system/smoke/rehearsal.test.ts) saw it: a policy update disconnected Node-RED amid a
  // burst of writes, and the writes published just before were served after the disconnect, judged
  // as a bare client id without the ServiceAccount's attribute: "not authorized".
  it('keeps the attributes of a client that disconnected, until it connects again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'principal-after-'))
    const layout = prepareDevLayout(dir)
    const broker = await startBroker({
      port: 0,
      tlsListeners: [
        {
          port: 0,
          certFile: layout.brokerCertFile,
          keyFile: layout.brokerKeyFile,
          authentication: {
            method: 'sat',
            tokenFiles: [{ file: layout.tokenFile, attributes: { group: 'node-red' } }],
          },
        },
      ],
    })
    try {
      const gone = new Promise<string>((resolve) => broker.onClientDisconnect(resolve))
      const client = await mqtt.connectAsync(broker.tlsUrls[0]!, {
        protocolVersion: 5,
        clientId: 'node-red-0',
        ca: readFileSync(layout.caFile),
        properties: { authenticationMethod: 'K8S-SAT', authenticationData: readFileSync(layout.tokenFile) },
        reconnectPeriod: 0,
      })
      assert.deepEqual(broker.principalOf('node-red-0').attributes, { group: 'node-red' })
      await client.endAsync()
      assert.equal(await gone, 'node-red-0')
      assert.equal(broker.isConnected('node-red-0'), false)
      assert.deepEqual(broker.principalOf('node-red-0').attributes, { group: 'node-red' })
      assert.deepEqual(broker.principalOf('never-connected'), { clientId: 'never-connected' })
    } finally {
      await broker.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
