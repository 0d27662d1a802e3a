import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { scaled } from '../../support/deadline'
import { ALL, flowWith, helper, nextMessage, useStore } from '../nodes/support'

/**
 * A *get key* msg of 10,000 keys of 60,000 bytes each (600 MB of requests) took 21–48 s and stalled
 * the editor for 14–27 s: only the key count was bounded. The keys of one msg are now bounded in
 * bytes too, refused before anything is sent with a code of their own and a message naming the limit.
 */
describe('security: a many-keys msg is bounded in bytes as well as in count', function () {
  this.timeout(60_000)
  const store = useStore()

  for (const [type, extra, msg] of [
    ['ss-get', {}, (keys: string[]) => ({ topic: keys })],
    ['ss-del', {}, (keys: string[]) => ({ topic: keys })],
    ['ss-set', { multi: 'object' }, (keys: string[]) => ({ payload: Object.fromEntries(keys.map((k) => [k, 'v'])) })],
  ] as const) {
    it(`${type}: 10,000 keys of 50,000 to 60,000 bytes fail with TooManyKeyBytes, and nothing is sent`, async () => {
      await helper.load(ALL, flowWith(store.url, { id: 'n', type, key: 'topic', keyType: 'msg', ...extra }))
      // Each key a length of its own: V8 hashes a string this long by its length alone, so keys of
      // one length make an object of them (ss-set's msg) quadratic to build, 60 s of blocked event
      // loop at load 8 (the embedded broker then drops its clients for silence).
      const keys = Array.from({ length: 10_000 }, (_, i) => {
        const prefix = `bytes/${i}/`
        return prefix + 'k'.repeat(60_000 - i - prefix.length)
      })
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode('n').receive(msg(keys))
      const c = await caught
      assert.equal((c.error as { code: string }).code, 'TooManyKeyBytes')
      // Nothing was written: the first key reads as missing (its limits follow the machine's pace).
      const client = new StateStoreClient({
        brokerUrl: store.emulator.brokerUrl,
        clientId: `bytes-${type}`,
        requestTimeoutMs: scaled(10_000),
      })
      try {
        await client.ready({ timeoutMs: scaled(5000) })
        assert.equal((await client.get(keys[0]!)).value, null)
      } finally {
        await client.close()
      }
    })
  }
})
