// The editor in Japanese and in German, chosen as a user chooses it (Node-RED's language setting):
// `npm start` with its example flows, Debian's chromium. The palette category, a node's dialog, its
// help and the state store sidebar must show that language's catalogue texts, and Node-RED's own
// palette must be in that language too (so the test proves the editor switched, not only our
// files). The page must log no error meanwhile. One screenshot per language goes to
// artifacts/browser/editor-<lang>.png; docs/images/editor-<lang>.png are copies of one run
// (made with Debian's fonts-noto-cjk installed, without which chromium draws Japanese as boxes;
// the assertions read the page's text and need no font).
import { strict as assert } from 'node:assert'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../smoke/node-red'
import { catalogue, type Catalogue } from './catalogue'
import { openSidebar } from './editor'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'

function text(cat: Catalogue, path: string): string {
  const value = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], cat)
  if (typeof value !== 'string') throw new Error(`no catalogue text ${path}`)
  return value
}

/** The `###` headings of a help page as shipped in that language. */
function helpHeadings(type: string, lang: string): string[] {
  const md = readFileSync(join(repoRoot, 'nodes', 'locales', lang, `${type}.html`), 'utf8')
  return [...md.matchAll(/^### (.+)$/gm)].map((m) => m[1]!.trim())
}

/** Node-RED's own name for its "common" palette category in that language. */
function nodeRedCommonCategory(lang: string): string {
  const editor = JSON.parse(
    readFileSync(join(repoRoot, 'node_modules', '@node-red', 'editor-client', 'locales', lang, 'editor.json'), 'utf8'),
  ) as Catalogue
  return text(editor, 'palette.label.common')
}

for (const lang of ['ja', 'de']) {
  describe(`editor in another language: ${lang}`, function () {
    this.timeout(120000)
    let session: OpenedEditor | null = null
    const get = catalogue('ss-get', lang)
    const config = catalogue('ss-config', lang)
    const sidebar = catalogue('ss-sidebar', lang)

    before(async function () {
      requireChromium(this)
      session = await openEditor(60000, { editorLanguage: lang })
    })

    after(async function () {
      await session?.close()
    })

    afterEach(async function () {
      await checkPage(this, session)
    })

    it("the palette: Node-RED's categories and ours are in that language", async function () {
      const page = session!.editor.page
      assert.equal(
        (await page.locator('#red-ui-palette-header-common').textContent())?.trim(),
        nodeRedCommonCategory(lang),
        'Node-RED itself speaks the language',
      )
      const ours = page.locator('#red-ui-palette-header-state_store')
      assert.equal((await ours.textContent())?.trim(), text(get, 'palette.label.state_store'))
      assert.notEqual(
        text(get, 'palette.label.state_store'),
        text(catalogue('ss-get'), 'palette.label.state_store'),
        'the category is translated',
      )
      const node = page.locator(
        '#red-ui-palette-container-state_store .red-ui-palette-node[data-palette-type="ss-get"] .red-ui-palette-label',
      )
      // Node-RED breaks a label of several words into lines, so spaces are compared as one
      assert.equal((await node.textContent())?.replace(/\s+/g, ' ').trim(), text(get, 'ss-get.paletteLabel'))
    })

    it("a node's dialog and its help", async function () {
      const { editor } = session!
      const node = (await editor.flowNodes()).find((n) => n.type === 'ss-get')
      assert.ok(node, 'the example flows have a get node')
      await editor.edit(node.id)
      const tray = editor.tray()
      assert.equal(
        (await tray.locator('label[for="node-input-decode"]').textContent())?.trim(),
        text(get, 'ss-get.label.decode'),
      )
      assert.equal(
        (await tray.locator('label[for="node-input-notFound"]').textContent())?.trim(),
        text(get, 'ss-get.label.notFound'),
      )
      assert.equal(
        (await tray.locator('label[for="node-input-key"]').first().textContent())?.trim(),
        text(config, 'common.label.key'),
      )
      assert.equal(
        (await tray.locator('label[for="node-input-store"]').textContent())?.trim(),
        text(config, 'common.label.store'),
      )
      const decodeOptions = (await tray.locator('#node-input-decode option').allTextContents()).map((o) => o.trim())
      assert.deepEqual(
        decodeOptions,
        ['auto', 'utf8', 'buffer', 'json', 'ndjson'].map((d) => text(config, `common.decode.${d}`)),
      )

      const help = await editor.helpFromDialog()
      assert.deepEqual(help.headings, helpHeadings('ss-get', lang))
      assert.notDeepEqual(help.headings, helpHeadings('ss-get', 'en-US'), 'the help is the translated one')
      await editor.page.setViewportSize({ width: 1600, height: 900 })
      await editor.onlyPaletteCategory(text(get, 'palette.label.state_store'))
      // The palette slides categories open and shut (jQuery, not CSS): the picture waits for it.
      await editor.page.locator('#red-ui-palette-base-category-common').waitFor({ state: 'hidden' })
      await editor.page
        .locator('#red-ui-palette-container-state_store .red-ui-palette-node[data-palette-type="ss-watch"]')
        .waitFor({ state: 'visible' })
      await editor.screenshot(`editor-${lang}`)
      await editor.cancel()
    })

    it('the state store sidebar', async function () {
      const page = session!.editor.page
      await openSidebar(page)
      assert.equal((await page.locator('.ss-sidebar-help').textContent())?.trim(), text(sidebar, 'ss-sidebar.help'))
      // The sidebar draws a connection's box once its first figures arrive: wait for it before reading
      await page.locator('.ss-sidebar-store .ss-sidebar-heading').first().waitFor()
      const headings = (
        await page.locator('.ss-sidebar-store').first().locator('.ss-sidebar-heading').allTextContents()
      ).map((h) => h.trim())
      assert.deepEqual(headings, [
        ...['connection', 'watches', 'locks'].map((s) => text(sidebar, `ss-sidebar.section.${s}`)),
        text(sidebar, 'ss-sidebar.section.timeline').replace('__n__', '5'),
      ])
      const store = page.locator('.ss-sidebar-store').first()
      // The examples' leader election is on the timeline, its time axis in that language.
      await store
        .locator('.ss-sidebar-timeline-axis span', { hasText: text(sidebar, 'ss-sidebar.timeline.now') })
        .first()
        .waitFor({ timeout: 20000 })
      await store
        .locator('.ss-sidebar-status .ss-sidebar-value', { hasText: text(sidebar, 'ss-sidebar.state.connected') })
        .waitFor()
      assert.equal(
        (await page.locator('.ss-sidebar-inspector .ss-sidebar-get').textContent())?.trim(),
        text(sidebar, 'ss-sidebar.inspector.get'),
      )
      await session!.editor.screenshot(`sidebar-${lang}`, page.locator('#red-ui-sidebar'))
    })
  })
}
