/**
 * One schema per node: each node's settings and defaults are declared once, in nodes/config/schemas.ts,
 * and the build writes every editor file's registration header from it; no editor file declares
 * `defaults` of its own.
 */
import { strict as assert } from 'node:assert'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { DEFAULT_IN_FLIGHT, DEFAULT_MAX_KEYS } from '../../nodes/msg/key-list'
import { registrationHeader, SCHEMAS, type NodeType } from '../../nodes/config/schemas'

const ROOT = resolve(__dirname, '..', '..')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  'node-red': { nodes: Record<string, string> }
}
const NODES = Object.keys(pkg['node-red'].nodes)

describe('node schemas: settings declared once', () => {
  it('every node of package.json has a schema, and no schema is without its node', () => {
    assert.deepEqual(Object.keys(SCHEMAS).sort(), [...NODES].sort())
  })

  for (const type of NODES) {
    it(`${type}.html takes its registration header from the schema and declares no defaults`, () => {
      const html = readFileSync(join(ROOT, 'nodes', `${type}.html`), 'utf8')
      assert.ok(
        html.includes(`  RED.nodes.registerType("${type}", {\n    // registration: nodes/config/schemas.ts\n`),
        'the marker the build replaces',
      )
      assert.doesNotMatch(html, /\bdefaults\s*:/)
    })
  }

  it('the header declares every setting of the schema, with its default', () => {
    for (const type of NODES as NodeType[]) {
      const header = registrationHeader(type)
      for (const key of Object.keys(SCHEMAS[type].defaults))
        assert.match(header, new RegExp(`^ {6}${key}: \\{`, 'm'), `${type}.${key}`)
    }
  })

  it("the key-list nodes' limits come from the constants their TS uses, written once", () => {
    for (const type of ['ss-get', 'ss-set', 'ss-del'] as const) {
      const header = registrationHeader(type)
      assert.ok(header.includes(`inFlight: { value: "${DEFAULT_IN_FLIGHT}", validate: `), type)
      assert.ok(header.includes(`maxKeys: { value: "${DEFAULT_MAX_KEYS}", validate: `), type)
    }
  })
})
