/**
 * Test connection under a BrokerAuthorization that names client ids (the emulator's embedded broker
 * applies it at CONNECT, as the AIO broker does): the refusal is told as authorization, never as
 * authentication, and the answer names the client id refused and the one the deployed connection uses.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ALL, helper as nodeHelper, type TestNode } from './support'
import { startEmulator, type Emulator } from '../../../src/emulator'

interface Supertest {
  post(path: string): Supertest
  send(body: unknown): Supertest
  expect(status: number): Promise<{ body: unknown }>
}
const helper = nodeHelper as typeof nodeHelper & { request(): Supertest }

/** The README's policy, with the rule for the editor's helpers when `helpers` is set. */
function policy(helpers: boolean): string {
  const rule = (ids: string) =>
    `      - principals:\n          clientIds: [${ids}]\n        brokerResources:\n          - method: Connect\n          - method: Subscribe\n            topics: ["clients/{principal.clientId}/#"]\n        stateStoreResources:\n          - method: ReadWrite\n            keyType: Pattern\n            keys: ["lines/{principal.clientId}/*", "recipe[0-9]"]\n`
  return `apiVersion: mqttbroker.iotoperations.azure.com/v1\nkind: BrokerAuthorization\nmetadata: { name: node-red-policy }\nspec:\n  authorizationPolicies:\n    rules:\n${rule('"node-red-0"')}${helpers ? rule('"node-red-0-test-*"') : ''}`
}

describe('Test connection under a policy that names client ids', function () {
  this.timeout(20_000)
  let dir: string
  const emulators: Emulator[] = []

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'test-button-policy-'))
  })
  afterEach(async () => {
    await helper.unload()
    await Promise.all(emulators.splice(0).map((e) => e.stop()))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  async function emulator(helpers: boolean): Promise<string> {
    const file = join(dir, `authz-${helpers}.yaml`)
    writeFileSync(file, policy(helpers))
    const e = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      authorizationFile: file,
      logLevel: 'silent',
    })
    emulators.push(e)
    return e.brokerUrl
  }

  async function load(broker: string, deployed: string): Promise<void> {
    await helper.load(ALL, [
      { id: 'tab', type: 'tab' },
      { id: 'cfg', type: 'ss-config', broker, clientId: deployed },
      { id: 'get', type: 'ss-get', z: 'tab', store: 'cfg', wires: [[]] },
    ])
  }

  async function test(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return (await helper.request().post('/ss-config/test').send(body).expect(200)).body as Record<string, unknown>
  }

  async function deployedConnected(): Promise<void> {
    const node = helper.getNode('cfg') as TestNode & {
      connection: { state: string }
      client: Promise<{ ready(o: { timeoutMs: number }): Promise<void> }> | null
    }
    await (await node.client!).ready({ timeoutMs: 5000 })
    assert.equal(node.connection.state, 'connected')
  }

  it("says the deployed id is let in and the test's own id is not, while the deployed connection is up", async () => {
    const broker = await emulator(false)
    await load(broker, 'node-red-0')
    await deployedConnected()
    const answer = await test({ id: 'cfg', broker, clientId: 'node-red-0' })
    assert.equal(answer.result, 'notAuthorizedTestId', JSON.stringify(answer))
    assert.equal(answer.clientId, 'node-red-0')
    assert.match(String(answer.testClientId), /^node-red-0-test-[0-9a-f]{6}$/)
  })

  it("tries the dialog's own id when nothing is deployed, and says so when that one is let in", async () => {
    const broker = await emulator(false)
    await load(broker, 'someone-else')
    const answer = await test({ broker, clientId: 'node-red-0' })
    assert.equal(answer.result, 'notAuthorizedTestId', JSON.stringify(answer))
    assert.equal(answer.clientId, 'node-red-0')
  })

  it('says not authorized (not authentication failed) and names the id when no rule lets it in', async () => {
    const broker = await emulator(false)
    await load(broker, 'node-red-0')
    const answer = await test({ broker, clientId: 'node-red-1' })
    assert.equal(answer.result, 'notAuthorized', JSON.stringify(answer))
    assert.equal(answer.clientId, 'node-red-1')
  })

  it("connects when the policy has a rule for the test's ids", async () => {
    const broker = await emulator(true)
    await load(broker, 'node-red-0')
    assert.deepEqual(await test({ broker, clientId: 'node-red-0' }), { result: 'connected' })
  })
})
