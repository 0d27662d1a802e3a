// The "state store" sidebar where a new user first meets it: `npm start` in Debian's
// chromium at 1440 x 900, the tab opened from its button and Node-RED 5's Debug tab left below it,
// so the tab gets about 300 x 280 px. Every section must read without horizontal scrolling there,
// what a click fills in must come into view, the tab must have its own icon, the inspector must show
// what Set and Delete left, sizes must read "1 byte", the key browser must show versions, and msgs
// that fail must appear among the connection's last errors. Screenshots: artifacts/browser/
// sidebar-layout-*.png (docs/images has them as *-before.png / *-after.png).
import { strict as assert } from 'node:assert'
import type { Locator, Page } from 'playwright-core'
import { StateStoreClient } from '../../../src/client'
import { Editor, openSidebar } from './editor'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'
import { columnShot, confirm, text } from './sidebar-support'
import { scaled } from '../../support/deadline'

const LOCK = 'examples/pump-owner'
const WATCHED = 'examples/thermostat/setpoint'

/** How far `inner` sticks out of `outer` to the right, in px (0 when it fits). */
async function overflowRight(outer: Locator, inner: Locator): Promise<number> {
  const o = await outer.boundingBox()
  const i = await inner.boundingBox()
  assert.ok(o && i)
  return Math.max(0, i.x + i.width - (o.x + o.width))
}

/** Whether the element is within the visible part of the (scrolled) sidebar panel. */
async function inView(page: Page, selector: string): Promise<boolean> {
  return page
    .locator(selector)
    .first()
    .evaluate((e) => {
      const panel = e.closest('.ss-sidebar')!.getBoundingClientRect()
      const r = e.getBoundingClientRect()
      return r.height > 0 && r.top >= panel.top - 1 && r.top < panel.bottom - 10
    })
}

describe("editor: the state store sidebar at Node-RED 5's default layout", function () {
  this.timeout(120000)
  let session: OpenedEditor | null = null
  let editor: Editor
  let page: Page
  let outside: StateStoreClient

  before(async function () {
    requireChromium(this)
    session = await openEditor(60000)
    ;({ editor } = session)
    page = editor.page
    const brokerUrl = /broker ready at (mqtt:\/\/\S+)/.exec(session.red.output)?.[1]
    assert.ok(brokerUrl, 'npm start names its broker')
    outside = new StateStoreClient({ brokerUrl, clientId: `sidebar-layout-${process.pid}` })
    await outside.ready({ timeoutMs: scaled(10000) })
    await openSidebar(page, 'default')
  })

  afterEach(async function () {
    await checkPage(this, session)
  })

  after(async function () {
    await outside?.close()
    await session?.close()
  })

  it('shares the column with Debug, as Node-RED 5 starts', async function () {
    assert.ok(await page.locator('#red-ui-sidebar .red-ui-debug-content').first().isVisible(), 'Debug is shown too')
    const panel = await page.locator('.ss-sidebar').boundingBox()
    assert.ok(
      panel && panel.height < 400,
      `the tab gets a small part of the column (${panel?.width} x ${panel?.height} px)`,
    )
  })

  it("has its own tab icon, not the Context Data tab's", async function () {
    await columnShot(page, 'sidebar-layout-column')
    const icon = async (tab: string) =>
      (await page.locator(`button[data-tab-id="${tab}"] i`).first().getAttribute('class')) ?? ''
    const ours = await icon('aio-statestore')
    const others = await Promise.all(['context', 'info', 'help', 'config', 'debug'].map(icon))
    assert.ok(ours.trim(), 'the tab has an icon')
    assert.ok(!others.includes(ours), `the icon (${ours}) is no other tab's: ${others.join(', ')}`)
  })

  it('picking a key in the key browser brings the inspector into view, scrolled to its value', async function () {
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        outside.set(`layout/picked/${String(i).padStart(2, '0')}`, `picked value ${i}`),
      ),
    )
    await page.locator('.ss-sidebar-browser-pattern').fill('layout/picked/*')
    await page.locator('.ss-sidebar-list').click()
    const last = page.locator('.ss-sidebar-browsed a', { hasText: 'layout/picked/19' })
    await last.waitFor()
    // As a user gets there: the list scrolled into view, the inspector above it out of sight.
    await page.locator('.ss-sidebar-browser').evaluate((e) => e.scrollIntoView({ block: 'start' }))
    await last.scrollIntoViewIfNeeded()
    assert.ok(!(await inView(page, '.ss-sidebar-inspector')), 'the inspector is out of sight before the click')
    await last.click()
    await page.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'picked value 19' }).waitFor()
    // Scrolling is smooth: give it the time it takes.
    await page.waitForTimeout(800)
    await columnShot(page, 'sidebar-layout-picked')
    assert.ok(await inView(page, '.ss-sidebar-inspected-value'), 'the inspected value is in view')
  })

  it('"show all" on a watched value brings the inspector into view', async function () {
    const long = JSON.stringify({ celsius: 21.5, note: 'x'.repeat(600) })
    await outside.set(WATCHED, long)
    try {
      const link = page.locator(`.ss-sidebar-watch[data-key="${WATCHED}"] .ss-sidebar-show-all`)
      await link.waitFor()
      await page.locator('.ss-sidebar').evaluate((e) => (e.scrollTop = 0))
      await link.scrollIntoViewIfNeeded()
      await link.click()
      await page.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'xxxx' }).waitFor()
      await page.waitForTimeout(800)
      assert.ok(await inView(page, '.ss-sidebar-inspected-value'), 'the inspected value is in view')
    } finally {
      // The thermostat example reads this key.
      await outside.set(WATCHED, '{"celsius": 21.5}')
    }
  })

  it('Set and Delete leave the inspector showing the key as it now is', async function () {
    const inspector = page.locator('.ss-sidebar-inspector')
    await outside.set('layout/edited', 'old value')
    await inspector.locator('.ss-sidebar-inspector-key').fill('layout/edited')
    await inspector.locator('.ss-sidebar-get').click()
    await inspector.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'old value' }).waitFor()
    await inspector.locator('.ss-sidebar-inspector-value').fill('new value')
    await inspector.locator('.ss-sidebar-set').click()
    await confirm(page, 'set')
    await inspector.locator('.ss-sidebar-ok').waitFor()
    await page.waitForTimeout(500)
    await inspector.locator('.ss-sidebar-set').scrollIntoViewIfNeeded()
    await columnShot(page, 'sidebar-layout-after-set')
    const stored = await outside.get('layout/edited')
    assert.equal(stored.value?.toString(), 'new value')
    await inspector.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'new value' }).waitFor()
    assert.equal(
      (await inspector.locator('.ss-sidebar-inspected-version .ss-sidebar-value').textContent())?.trim(),
      stored.version!.toString(),
    )
    assert.equal(
      (await inspector.locator('.ss-sidebar-ok').textContent())?.trim(),
      text('inspector.done.set', { version: stored.version!.toString() }),
    )
    // The key browser lists what is there now too.
    await page.locator('.ss-sidebar-browser-pattern').fill('layout/edited')
    await page.locator('.ss-sidebar-list').click()
    await page.locator('.ss-sidebar-browsed', { hasText: 'layout/edited' }).waitFor()

    await inspector.locator('.ss-sidebar-delete').click()
    await confirm(page, 'delete')
    await inspector.locator('.ss-sidebar-ok', { hasText: text('inspector.done.deleted') }).waitFor()
    assert.equal(await inspector.locator('.ss-sidebar-inspected-value').count(), 0, 'the deleted value is gone')
    // Listed again with SCAN (the emulator of npm start answers it): an empty page.
    await page.locator('.ss-sidebar-count', { hasText: text('browser.scanCount', { count: 0 }) }).waitFor()
    assert.equal(
      await page.locator('.ss-sidebar-browsed').count(),
      0,
      'the key browser no longer lists the deleted key',
    )
  })

  it('sizes read "1 byte" and "2 bytes", and the key browser has a version column', async function () {
    await outside.set('layout/size/a', 'x')
    await outside.set('layout/size/b', 'xy')
    await page.locator('.ss-sidebar-browser-pattern').fill('layout/size/*')
    await page.locator('.ss-sidebar-list').click()
    const rows = page.locator('.ss-sidebar-browsed')
    await rows.nth(1).waitFor()
    await page.locator('.ss-sidebar-browser').evaluate((e) => e.scrollIntoView({ block: 'start' }))
    await columnShot(page, 'sidebar-layout-browser')
    const a = rows.filter({ hasText: 'layout/size/a' })
    const b = rows.filter({ hasText: 'layout/size/b' })
    assert.equal((await a.locator('.ss-sidebar-browsed-size').textContent())?.trim(), '1 byte')
    assert.equal((await b.locator('.ss-sidebar-browsed-size').textContent())?.trim(), '2 bytes')
    assert.equal(
      (await page.locator('.ss-sidebar-key-list th').allTextContents())
        .map((s) => s.trim())
        .includes(text('browser.version')),
      true,
      'a Version column',
    )
    assert.equal(
      (await a.locator('.ss-sidebar-browsed-version').textContent())?.trim(),
      (await outside.get('layout/size/a')).version!.toString(),
    )
  })

  it('msgs that fail are among the last errors of their connection', async function () {
    const errors = page.locator('.ss-sidebar-store').first().locator('.ss-sidebar-errors')
    const before = await errors.locator('.ss-sidebar-error-line').count()
    // The active/standby example's late write from A is refused (FencingTokenLowerVersion): a
    // failed msg on a connection that is fine.
    const held = (holder: string) =>
      page.locator(`.ss-sidebar-lock.ss-sidebar-held[data-lock="${LOCK}"] .ss-sidebar-lock-holder`, {
        hasText: `(${holder})`,
      })
    await editor.pressInject('A tries')
    await held('A').waitFor({ timeout: scaled(20000) })
    await editor.pressInject('A steps down')
    await held('A').waitFor({ state: 'detached' })
    await editor.pressInject('B tries again')
    await held('B').waitFor({ timeout: scaled(20000) })
    await editor.pressInject('late write from A')
    const line = errors
      .locator('.ss-sidebar-error-line', { hasText: 'FencingTokenLowerVersion' })
      .or(errors.locator('.ss-sidebar-error-line', { hasText: /fencing token/i }))
    await line
      .first()
      .waitFor({ timeout: scaled(10000) })
      .catch(() => undefined)
    await errors.evaluate((e) => e.scrollIntoView({ block: 'start' }))
    await columnShot(page, 'sidebar-layout-errors')
    assert.ok(
      (await errors.locator('.ss-sidebar-error-line').count()) > before,
      'the failed msg is counted among the last errors',
    )
    assert.ok(await line.first().isVisible(), 'its line says why it failed')
  })

  it('every section reads without horizontal scrolling', async function () {
    const panel = page.locator('.ss-sidebar')
    const sizes = await panel.evaluate((e) => [e.scrollWidth, e.clientWidth])
    assert.ok(sizes[0]! <= sizes[1]!, `the tab does not scroll sideways (${sizes.join(' > ')})`)
    for (const section of ['.ss-sidebar-header', '.ss-sidebar-store', '.ss-sidebar-inspector', '.ss-sidebar-browser']) {
      const s = page.locator(section).first()
      assert.equal(await overflowRight(panel, s), 0, `${section} fits`)
      // Nothing inside a section runs past its edge or scrolls sideways on its own.
      const wide = await s.evaluate((e) => {
        const edge = e.getBoundingClientRect().right + 0.5
        return [...e.querySelectorAll('*')]
          .filter((c) => (c as HTMLElement).offsetParent !== null)
          .filter((c) => c.getBoundingClientRect().right > edge || c.scrollWidth > c.clientWidth + 1)
          .map((c) => `${c.tagName.toLowerCase()}.${[...c.classList].join('.')}`)
      })
      assert.deepEqual(wide, [], `in ${section}, nothing is wider than the section`)
    }
  })

  it('at about 290 px nothing wraps mid-word: broker URL, lock names, keys; the store selects show their whole name', async function () {
    // The lock of the active/standby example taken, so its name is shown.
    await editor.pressInject('A tries')
    await page
      .locator(`.ss-sidebar-lock[data-lock="${LOCK}"]`)
      .first()
      .waitFor({ timeout: scaled(20000) })
    const width = (await page.locator('.ss-sidebar').boundingBox())!.width
    assert.ok(width <= 320, `the tab is as narrow as Node-RED 5 makes it (${width} px)`)
    const midWord = await page.locator('.ss-sidebar').evaluate((root) => {
      const found: string[] = []
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
      const range = document.createRange()
      // A line break between two letters or digits is mid-word; after a space or a separator it is not.
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const text = n.textContent ?? ''
        const parent = n.parentElement
        // Ids (a lock's holder: a client id and a 16-digit node id by default) are no words to keep whole.
        if (
          !parent ||
          parent.offsetParent === null ||
          parent.closest('.ss-sidebar-pre, .ss-sidebar-id, textarea, select, svg')
        )
          continue
        let lastTop: number | null = null
        for (let i = 0; i < text.length; i++) {
          range.setStart(n, i)
          range.setEnd(n, i + 1)
          const rect = range.getClientRects()[0]
          if (!rect || rect.width === 0) continue
          if (
            lastTop !== null &&
            rect.top > lastTop + 2 &&
            /[\p{L}\p{N}]/u.test(text[i - 1] ?? '') &&
            /[\p{L}\p{N}]/u.test(text[i]!)
          )
            found.push(
              `${text.slice(Math.max(0, i - 12), i)}|${text.slice(i, i + 12)} (in ${parent.className || parent.tagName})`,
            )
          lastTop = rect.top
        }
      }
      return found
    })
    assert.deepEqual(midWord, [], 'text wraps only at spaces and separators')
    const cut = await page.locator('.ss-sidebar select').evaluateAll((selects) =>
      (selects as HTMLSelectElement[])
        .filter((s) => s.offsetParent !== null && s.selectedIndex >= 0)
        .filter((s) => {
          const probe = document.createElement('span')
          probe.style.font = getComputedStyle(s).font
          probe.style.whiteSpace = 'pre'
          probe.textContent = s.options[s.selectedIndex]!.text
          document.body.append(probe)
          const needed = probe.getBoundingClientRect().width
          probe.remove()
          // The arrow and the padding take about 30 px of the select.
          return needed > s.clientWidth - 30
        })
        .map((s) => `${s.className}: ${s.options[s.selectedIndex]!.text}`),
    )
    assert.deepEqual(cut, [], 'each store select shows its whole option')
  })
})
