// deploy/overlays/active-active: the editor's deploys reach every replica. Two replicas with the
// overlay's own settings (run from the repository, as npm run rehearse does) against the emulator;
// both start with the flows the first seeded into the state store; a deploy through one replica's
// admin API (logged in, as the editor does) is loaded by the other from its key notification, and
// both run it; a redeploy midway changes both again.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NodeRedChild } from '../../../dev/node-red'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { StateStoreClient } from '../../../src'
import { secretsFor, startReplica } from '../../../scripts/rehearse'
import { until } from '../../support/wait'

const TAB = 'aa00000000000001'
const flowsWith = (label: string) => [
  { id: TAB, type: 'tab', label },
  { id: 'aa00000000000002', type: 'comment', z: TAB, name: label, x: 100, y: 100, wires: [] },
]

async function login(url: string): Promise<string> {
  const res = await fetch(`${url}/auth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      client_id: 'node-red-admin',
      grant_type: 'password',
      scope: '*',
      username: 'admin',
      password: 'rehearsal',
    }),
  })
  return ((await res.json()) as { access_token: string }).access_token
}

async function running(url: string, token: string): Promise<string | undefined> {
  const res = await fetch(`${url}/flows`, {
    headers: { Authorization: `Bearer ${token}`, 'Node-RED-API-Version': 'v2' },
  })
  const { flows } = (await res.json()) as { flows: Array<{ type: string; name?: string }> }
  return flows.find((n) => n.type === 'comment')?.name
}

describe('deploy/overlays/active-active: a deploy to one replica reaches every replica', function () {
  this.timeout(600_000)
  let root = ''
  let emulator: Emulator | null = null
  const replicas: NodeRedChild[] = []

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'aio-ss-aa-'))
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    const secrets = secretsFor(join(root, 'secrets'))
    const brokerPort = Number(new URL(emulator.brokerUrl).port)
    for (let index = 0; index < 2; index++)
      replicas.push(
        await startReplica({
          overlay: 'active-active',
          root,
          index,
          brokerPort,
          secrets,
          flows: flowsWith(`seeded by node-red-${index}`),
          termMs: 3000,
        }),
      )
  })

  after(async () => {
    for (const r of replicas) await r.stop()
    await emulator?.stop()
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it('both start with the seeded flows; a deploy on either, twice, is running on both and in the store', async () => {
    const tokens = await Promise.all(replicas.map((r) => login(r.url)))
    await until(
      async () => (await running(replicas[1]!.url, tokens[1]!)) === (await running(replicas[0]!.url, tokens[0]!)),
      'both on one seeded flow',
      60_000,
      200,
    )
    for (const [from, label] of [
      [0, 'deployed on node-red-0'],
      [1, 'redeployed on node-red-1'],
    ] as const) {
      const res = await fetch(`${replicas[from]!.url}/flows`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${tokens[from]}`,
          'Content-Type': 'application/json',
          'Node-RED-Deployment-Type': 'full',
        },
        body: JSON.stringify(flowsWith(label)),
      })
      assert.equal(res.status, 204, await res.text())
      for (let i = 0; i < replicas.length; i++)
        await until(
          async () => (await running(replicas[i]!.url, tokens[i]!)) === label,
          `node-red-${i} running "${label}"`,
          60_000,
          200,
        )
    }
    const observer = new StateStoreClient({ brokerUrl: emulator!.brokerUrl, clientId: 'aa-observer' })
    try {
      await observer.ready({ timeoutMs: 30_000 })
      assert.match(String((await observer.get('nodered/aa/flows')).value), /redeployed on node-red-1/)
    } finally {
      await observer.close()
    }
    assert.ok(replicas.every((r) => r.running))
  })
})
