// The examples as a user sees them in the editor (`npm start` deploys every one, each on its tab):
// no two nodes of a tab overlap, measured on the nodes as the editor draws them (its width comes
// from the label, its height from the outputs).
import { strict as assert } from 'node:assert'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'

/** The editor's API in the page, as far as this test reads it. */
declare const RED: {
  nodes: {
    eachNode(
      cb: (n: { id: string; type: string; z?: string; x: number; y: number; w?: number; h?: number }) => void,
    ): void
  }
  utils: { getNodeLabel(n: unknown, fallback: string): string }
}

interface Drawn {
  id: string
  label: string
  x: number
  y: number
  w: number
  h: number
}

describe('examples: laid out without overlaps (npm start, chromium)', function () {
  this.timeout(180000)
  let session: OpenedEditor | null = null

  before(async function () {
    requireChromium(this)
    session = await openEditor(60000, { startArgs: ['--memory'] })
  })
  after(async () => session?.close())
  afterEach(async function () {
    await checkPage(this, session)
  })

  it('no two nodes of an example tab overlap', async function () {
    const editor = session!.editor
    const overlaps: string[] = []
    const tabs = await editor.workspaces()
    assert.ok(tabs.length >= 5, `the examples are deployed: ${tabs.map((t) => t.label).join(', ')}`)
    for (const tab of tabs) {
      await editor.showWorkspace(tab.id)
      // Drawn: the editor sets each node's size when it draws the tab.
      await editor.page.waitForFunction((z) => {
        let drawn = true
        RED.nodes.eachNode((n) => {
          if (n.z === z && !n.w) drawn = false
        })
        return drawn
      }, tab.id)
      const nodes = await editor.page.evaluate((z) => {
        const list: Drawn[] = []
        RED.nodes.eachNode((n) => {
          if (n.z !== z || n.type === 'comment' || n.type === 'group') return
          list.push({ id: n.id, label: RED.utils.getNodeLabel(n, n.type), x: n.x, y: n.y, w: n.w ?? 0, h: n.h ?? 0 })
        })
        return list
      }, tab.id)
      for (let i = 0; i < nodes.length; i++)
        for (let j = i + 1; j < nodes.length; j++) {
          const a = nodes[i]!
          const b = nodes[j]!
          if (Math.abs(a.x - b.x) < (a.w + b.w) / 2 && Math.abs(a.y - b.y) < (a.h + b.h) / 2)
            overlaps.push(
              `${tab.label}: "${a.label}" (${a.x}, ${a.y}, ${a.w}×${a.h}) and "${b.label}" (${b.x}, ${b.y}, ${b.w}×${b.h})`,
            )
        }
    }
    assert.deepEqual(overlaps, [])
  })
})
