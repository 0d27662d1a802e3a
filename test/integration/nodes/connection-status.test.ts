/**
 * The connection part of a node's status as a user reads it in the editor: a broker that refuses
 * the connection is named with its address and port, the one thing to check.
 */
import { freePort } from '../../../dev/ports'
import { ALL, flowWith, helper, lastStatus } from './support'
import { until } from '../../support/wait'

describe('nodes: the connection status keeps what a user needs to fix it', function () {
  this.timeout(30000)
  afterEach(() => helper.unload())

  it('a refused connection shows the address with its port', async () => {
    const port = await freePort()
    await helper.load(
      ALL,
      flowWith(`mqtt://127.0.0.1:${port}`, { id: 'get', type: 'ss-get', store: 'cfg', key: 'k', keyType: 'str' }),
    )
    await until(
      () => String(lastStatus(helper.getNode('get')).text).includes(`127.0.0.1:${port}`),
      `the status names 127.0.0.1:${port}`,
      15000,
    )
  })
})
