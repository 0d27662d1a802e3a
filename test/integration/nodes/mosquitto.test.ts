import assert from 'node:assert/strict'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { mosquittoUrl } from '../../support/broker'
import { ALL, TAB, configNode, helper, lastStatus, listen, nextMessage, onTab } from './support'
import { until } from '../../support/wait'

describe('nodes over mosquitto (a real MQTT 5 broker, the emulator as a separate client)', function () {
  let emulator: Emulator | null = null
  let url = ''
  before(async function () {
    url = await mosquittoUrl(this)
    emulator = await startEmulator({ brokerUrl: url, logLevel: 'error' })
  })
  after(async () => {
    await emulator?.stop()
  })
  afterEach(() => helper.unload())

  it('sets, gets, watches, deletes and locks end to end', async () => {
    const prefix = `mq-${process.pid}-${Date.now()}`
    await helper.load(ALL, [
      TAB,
      configNode(url, { clientId: `${prefix}-nodered` }),
      onTab({ id: 'watch', type: 'ss-watch', store: 'cfg', keys: `${prefix}/k`, wires: [['changes']] }),
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: `${prefix}/k`, keyType: 'str', wires: [['setOut']] }),
      onTab({
        id: 'get',
        type: 'ss-get',
        store: 'cfg',
        key: `${prefix}/k`,
        keyType: 'str',
        decode: 'buffer',
        wires: [['getOut']],
      }),
      onTab({ id: 'del', type: 'ss-del', store: 'cfg', key: `${prefix}/k`, keyType: 'str', wires: [['delOut']] }),
      onTab({
        id: 'lock',
        type: 'ss-lock',
        store: 'cfg',
        key: `${prefix}/lock`,
        keyType: 'str',
        holder: 'me',
        wires: [['locked'], ['notLocked']],
      }),
      ...['changes', 'setOut', 'getOut', 'delOut', 'locked', 'notLocked'].map((id) => onTab({ id, type: 'helper' })),
    ])
    const changes = helper.getNode('changes')
    listen(changes)
    await until(() => String(lastStatus(helper.getNode('watch')).text).includes('watching 1'), 'watching', 5000)

    const bytes = Buffer.from([0, 1, 2, 250, 251, 252])
    let w = nextMessage(helper.getNode('setOut'))
    helper.getNode('set').receive({ payload: bytes })
    assert.equal((await w).applied, true)
    const change = await nextMessage(changes)
    assert.deepEqual(change.payload, bytes)
    assert.equal(change.operation, 'SET')

    w = nextMessage(helper.getNode('getOut'))
    helper.getNode('get').receive({})
    assert.deepEqual((await w).payload, bytes)

    const locked = nextMessage(helper.getNode('locked'))
    helper.getNode('lock').receive({})
    assert.equal((await locked).holder, 'me')

    w = nextMessage(helper.getNode('delOut'))
    helper.getNode('del').receive({})
    assert.equal((await w).deleted, 1)
    assert.equal((await nextMessage(changes)).operation, 'DELETE')
  })
})
