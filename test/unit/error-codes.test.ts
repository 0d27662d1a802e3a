/**
 * The nodes' error vocabulary is closed: every code a node hands a Catch node has its short text in
 * each language's catalogue (the status shows it) and its row in docs/nodes.md's table of codes.
 */
import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { NODE_ERROR_CODES } from '../../nodes/lib/errors'

const ROOT = resolve(__dirname, '..', '..')
const LOCALES = join(ROOT, 'nodes', 'locales')

describe('error codes: one closed vocabulary', () => {
  it('every code is PascalCase and listed once', () => {
    assert.deepEqual(
      NODE_ERROR_CODES.filter((code) => !/^[A-Z][A-Za-z]+$/.test(code)),
      [],
    )
    assert.equal(new Set(NODE_ERROR_CODES).size, NODE_ERROR_CODES.length)
  })

  for (const language of readdirSync(LOCALES)) {
    it(`every code has its status text in ${language}`, () => {
      const catalogue = JSON.parse(readFileSync(join(LOCALES, language, 'ss-config.json'), 'utf8')) as {
        common: { failure: Record<string, string> }
      }
      const { failure } = catalogue.common
      assert.deepEqual(
        NODE_ERROR_CODES.filter((code) => typeof failure[code] !== 'string' || failure[code] === ''),
        [],
      )
      assert.deepEqual(
        Object.keys(failure).filter((code) => !NODE_ERROR_CODES.includes(code as never)),
        [],
        'a text for a code no node fails with',
      )
    })
  }

  it('every code has its row in docs/nodes.md, and the table names no other', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'nodes.md'), 'utf8')
    const rows = [...doc.matchAll(/^\| `([A-Za-z]+)` \| [^|]+ \|/gm)].map((m) => m[1]!)
    assert.deepEqual(
      NODE_ERROR_CODES.filter((code) => !rows.includes(code)),
      [],
    )
    assert.deepEqual(
      rows.filter((code) => /^[A-Z]/.test(code) && !NODE_ERROR_CODES.includes(code as never)),
      [],
    )
  })
})
