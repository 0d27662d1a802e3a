/**
 * A config node with blank fields in a Node-RED whose process has the AIO SDKs' environment: it
 * connects where AIO_BROKER_HOSTNAME and its port say, as AIO_MQTT_CLIENT_ID; a wrong variable is
 * named with its value in the status and the log while the flow keeps running; the dialog's
 * endpoint says what each blank field stands for; Test connection goes where a blank field does.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { NodeAPI } from 'node-red'
import { readAioEnvironment, type EnvironmentProblem } from '../../../src/client'
import { environmentText } from '../../../nodes/config/environment'
import { ALL, flowWith, helper, lastStatus, nextMessage, useStore } from './support'
import { until } from '../../support/wait'

const helperWithRequest = helper as typeof helper & {
  request(): {
    get(path: string): { expect(status: number): Promise<{ body: unknown }> }
    post(path: string): { send(body: unknown): { expect(status: number): Promise<{ body: unknown }> } }
  }
}

function withEnv(vars: Record<string, string>): () => void {
  const saved = Object.keys(vars).map((k) => [k, process.env[k]] as const)
  Object.assign(process.env, vars)
  return () => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

describe('nodes: a config node with blank fields takes the AIO environment', function () {
  this.timeout(20_000)
  const store = useStore()
  let restore: (() => void) | null = null
  afterEach(() => {
    restore?.()
    restore = null
  })

  function aioEnv(extra: Record<string, string> = {}) {
    const url = new URL(store.url)
    restore = withEnv({
      AIO_BROKER_HOSTNAME: url.hostname,
      AIO_BROKER_TCP_PORT: url.port,
      AIO_MQTT_USE_TLS: 'false',
      AIO_MQTT_CLIENT_ID: `node-red-0-${process.pid}`,
      ...extra,
    })
  }

  it('connects where AIO_BROKER_HOSTNAME says, as AIO_MQTT_CLIENT_ID, and a set then get works', async () => {
    aioEnv()
    const flow = flowWith('', { id: 'set', type: 'ss-set', key: 'env/blank', keyType: 'str' })
    flow.push(
      {
        id: 'get',
        type: 'ss-get',
        z: 'tab',
        x: 1,
        y: 1,
        store: 'cfg',
        key: 'env/blank',
        keyType: 'str',
        wires: [['got']],
      },
      { id: 'got', type: 'helper', z: 'tab' },
    )
    await helper.load(ALL, flow)
    await until(() => lastStatus(helper.getNode('set')).fill === 'green', 'connected')
    assert.equal((helper.getNode('cfg') as unknown as { clientId: string }).clientId, `node-red-0-${process.pid}`)
    helper.getNode('set').receive({ payload: 'from the environment' })
    await nextMessage(helper.getNode('out1'))
    helper.getNode('get').receive({})
    assert.equal((await nextMessage(helper.getNode('got'))).payload, 'from the environment')
    const view = (await helperWithRequest.request().get('/ss-config/environment').expect(200)).body as Record<
      string,
      unknown
    >
    assert.equal(view.broker, `mqtt://${new URL(store.url).host}`)
    assert.equal(view.clientId, `node-red-0-${process.pid}`)
    const tested = (
      await helperWithRequest.request().post('/ss-config/test').send({ broker: '', clientId: '' }).expect(200)
    ).body
    assert.deepEqual(tested, { result: 'connected' }, 'Test connection with a blank broker goes where the node does')
  })

  it('two config nodes with a blank Client ID: the first takes AIO_MQTT_CLIENT_ID, the other one of its own, and says so', async () => {
    aioEnv()
    const id = `node-red-0-${process.pid}`
    await helper.load(ALL, [
      ...flowWith('', { id: 'set', type: 'ss-set', key: 'env/one', keyType: 'str' }),
      { id: 'cfg2', type: 'ss-config', name: 'second', broker: '', clientId: '' },
      { id: 'set2', type: 'ss-set', z: 'tab', x: 1, y: 1, store: 'cfg2', key: 'env/two', keyType: 'str', wires: [] },
    ])
    await until(
      () => lastStatus(helper.getNode('set')).fill === 'green' && lastStatus(helper.getNode('set2')).fill === 'green',
      'both connected',
    )
    const ids = ['cfg', 'cfg2'].map((n) => (helper.getNode(n) as unknown as { clientId: string }).clientId)
    assert.deepEqual(ids, [id, `${id}-cfg2`])
    assert.deepEqual(
      helper
        .getNode('cfg2')
        .warn.getCalls()
        .map((c) => c.args[0]),
      ['ss-config.log.environmentClientId'],
    )
    // After a full redeploy the first takes it again: a closed node gives its claim back.
    await helper.unload()
    await helper.load(ALL, flowWith('', { id: 'set', type: 'ss-set', key: 'env/one', keyType: 'str' }))
    assert.equal((helper.getNode('cfg') as unknown as { clientId: string }).clientId, id)
  })

  it('names a wrong variable with its value in the status and the log; msgs fail to a Catch node', async () => {
    aioEnv({ AIO_BROKER_TCP_PORT: 'eighty' })
    await helper.load(ALL, flowWith('', { id: 'set', type: 'ss-set', key: 'env/wrong', keyType: 'str' }))
    const cfg = helper.getNode('cfg')
    await until(() => cfg.error.getCalls().length > 0, 'the config node logged the error')
    const logged = JSON.stringify(cfg.error.getCalls()[0]!.args)
    assert.match(logged, /ss-config\.errors\.start/)
    await until(() => lastStatus(helper.getNode('set')).fill === 'red', 'a red status')
    assert.match(String(lastStatus(helper.getNode('set')).text), /ss-config\.errors\.environment/)
    helper.getNode('set').receive({ payload: 'x' })
    const caught = await nextMessage(helper.getNode('caught'))
    assert.ok(caught.error, 'a Catch node sees the failure')
    const view = (await helperWithRequest.request().get('/ss-config/environment').expect(200)).body as Record<
      string,
      unknown
    >
    assert.match(String(view.error), /ss-config\.errors\.environment/)
  })

  it('says which variable, its value and the problem, in every locale', () => {
    const said: Array<[string, Record<string, string> | undefined]> = []
    const RED = {
      _: (key: string, subs?: Record<string, string>) => (said.push([key, subs]), key),
    } as unknown as NodeAPI
    let error: unknown
    try {
      readAioEnvironment({ AIO_BROKER_TCP_PORT: 'eighty' })
    } catch (err) {
      error = err
    }
    environmentText(RED, error)
    assert.deepEqual(said, [
      ['ss-config.environment.number', undefined],
      [
        'ss-config.errors.environment',
        { variable: 'AIO_BROKER_TCP_PORT', value: 'eighty', problem: 'ss-config.environment.number' },
      ],
    ])
    const problems: EnvironmentProblem[] = ['number', 'boolean', 'url', 'file', 'exclusive', 'pair']
    for (const locale of readdirSync(join(__dirname, '..', '..', '..', 'nodes', 'locales'))) {
      const catalogue = JSON.parse(
        readFileSync(join(__dirname, '..', '..', '..', 'nodes', 'locales', locale, 'ss-config.json'), 'utf8'),
      )['ss-config']
      assert.match(catalogue.errors.environment, /__variable__.*__value__.*__problem__/s, locale)
      for (const p of problems) assert.ok(catalogue.environment[p], `${locale}: environment.${p}`)
    }
  })
})
