import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { defaultClientId } from '../../src/client'
import { resolveConfig } from '../../src/context/config'

describe('default client ids', () => {
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '-')

  it('differ between two user directories on one host running the same flow, and stay the same after a restart', () => {
    const a = defaultClientId('/home/me/.node-red', 'b5c1f0e2a7d34c19')
    const b = defaultClientId('/home/me/second/.node-red', 'b5c1f0e2a7d34c19')
    assert.notEqual(a, b)
    assert.equal(defaultClientId('/home/me/.node-red', 'b5c1f0e2a7d34c19'), a)
    assert.notEqual(defaultClientId('/home/me/.node-red', 'another-config-node'), a)
    assert.equal(a.slice(0, `nodered-${host}-`.length), `nodered-${host}-`)
    assert.match(a, /-[0-9a-f]{8}$/)
  })

  it('are valid MQTT client ids and response topic levels (no +, # or /), whatever the host name', () => {
    for (const id of [defaultClientId('/x', 'y'), defaultClientId('C:\\Users\\me\\.node-red', 'a/b#c+', 'context')]) {
      assert.match(id, /^[A-Za-z0-9_.-]+$/)
    }
  })

  it('follow one rule for the config node and the context store', () => {
    const userDir = '/home/me/.node-red'
    const context = resolveConfig({ settings: { userDir }, logger: () => {} }).client.clientId
    assert.equal(context, defaultClientId(userDir, 'nodered/.node-red/', 'context'))
    assert.notEqual(
      context,
      defaultClientId(userDir, 'nodered/.node-red/'),
      'a config node never gets the context store id',
    )
  })
})
