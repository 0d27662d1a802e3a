/**
 * docs/nodes.md is the reference of every node's settings: each setting a node's editor definition
 * declares (its `defaults`) is named in that node's section, as `name`.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runInNewContext } from 'node:vm'

const ROOT = join(__dirname, '..', '..')

/** The settings a node file registers, by node type: its definition's `defaults`, read by running its first script with a stand-in RED. */
function settingsOf(file: string): Map<string, string[]> {
  const html = readFileSync(file, 'utf8')
  const found = new Map<string, string[]>()
  for (const m of html.matchAll(/<script type="text\/javascript">([\s\S]*?)<\/script>/g)) {
    runInNewContext(m[1]!, {
      RED: {
        nodes: {
          registerType: (type: string, def: { defaults?: Record<string, unknown> }) =>
            found.set(type, Object.keys(def.defaults ?? {})),
        },
      },
      window: {},
      $: () => ({}),
    })
  }
  return found
}

/** The section of docs/nodes.md about one node type: from its `## type` heading (`## ss-config (state store)` too) to the next `## `. */
function section(doc: string, type: string): string | null {
  const start = doc.search(new RegExp(`\n## ${type}[ \n]`))
  if (start < 0) return null
  const end = doc.indexOf('\n## ', start + 1)
  return doc.slice(start, end < 0 ? undefined : end)
}

describe('docs/nodes.md names every node setting', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'nodes.md'), 'utf8')
  const files = readdirSync(join(ROOT, 'nodes')).filter((f) => /^ss-.*\.html$/.test(f) && f !== 'ss-sidebar.html')
  for (const file of files) {
    for (const [type, settings] of settingsOf(join(ROOT, 'nodes', file))) {
      it(`${type}: every setting of its editor definition is in its section`, () => {
        const text = section(doc, type)
        assert.ok(text, `docs/nodes.md has a section "## ${type}"`)
        const missing = settings.filter((s) => !text.includes(`\`${s}\``))
        assert.deepEqual(missing, [], `settings of ${type} not named in docs/nodes.md`)
      })
    }
  }
})
