// A new user's first hour in the editor, in Debian's chromium against `npm start`: a
// quiet Debug sidebar after start, the palette filter finding the nodes, a new node that takes the
// state store at once, an uncaught error that reads as one line with the status naming it, and the
// config dialog's Test connection button and resolved ${AIO_STATESTORE_URL}. Screenshots of each
// go to artifacts/browser/first-hour-*.png (not kept in docs/images: no doc shows them).
import { strict as assert } from 'node:assert'
import { Editor } from './editor'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'
import { catalogue as readCatalogue } from './catalogue'
import { freePort } from '../../../dev/ports'
import { scaled } from '../../support/deadline'

declare const RED: {
  sidebar: { show(id: string): void }
  view: { importNodes(nodes: unknown[], options: Record<string, unknown>): void }
}

const catalogue = readCatalogue('ss-config') as {
  'ss-config': { test: Record<string, string>; tip: Record<string, string> }
  common: { errors: Record<string, string>; failure: Record<string, string> }
}
const PALETTE_TYPES = ['ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-update', 'ss-watch']

describe('the editor in its first hour (npm start, chromium)', function () {
  this.timeout(60000)
  let session: OpenedEditor | null = null
  let editor: Editor
  let getId = ''

  before(async function () {
    requireChromium(this)
    session = await openEditor()
    ;({ editor } = session)
  })

  afterEach(async function () {
    await checkPage(this, session)
  })

  after(async function () {
    await session?.close()
    session = null
  })

  it("starts quiet: a first tab explains the examples, and Debug holds only the leader election's line", async function () {
    const page = editor.page
    const tabs = await editor.workspaces()
    assert.equal(tabs[0]?.label, 'About these examples')
    await page.evaluate(() => RED.sidebar.show('debug'))
    // The shipped examples fire their inject-once nodes up to 1.5 s after deploy, and the expiry
    // check 3 s after: by 4 s every one of them would have printed.
    await page.waitForTimeout(4000)
    const sources = await page.locator('#red-ui-sidebar .red-ui-debug-msg .red-ui-debug-msg-name').allTextContents()
    assert.ok(
      sources.every((s) => /node: leader/.test(s)),
      `only the leader election prints by itself: ${JSON.stringify(sources)}`,
    )
    await editor.showWorkspace(tabs[0].id)
    await editor.screenshot('first-hour-debug-after-start', page.locator('#red-ui-main-container'))
  })

  it('shows who leads the leader election when the editor opens, though its msg reached Debug before', async function () {
    const leader = (await editor.flowNodes()).find((n) => n.type === 'debug' && n.name === 'leader')
    assert.ok(leader, 'the leader election example has its leader debug node')
    await editor.showWorkspace(leader.z)
    await editor.node(leader.id).locator('text.red-ui-flow-node-status-label', { hasText: 'one leads' }).waitFor()
    assert.equal((await editor.status(leader.id)).text, 'one leads')
    await editor.screenshot('first-hour-leader-status', editor.page.locator('#red-ui-workspace'))
  })

  it('the palette filter finds every node by "state", "aio" and "statestore", and ss-watch by "watch"', async function () {
    const page = editor.page
    const search = page.locator('#red-ui-palette-search input')
    const shown = async (): Promise<string[]> =>
      page
        .locator('.red-ui-palette-node:visible')
        .evaluateAll((els) => els.map((el) => el.getAttribute('data-palette-type') ?? ''))
    // The filter runs on key presses (typing, not a pasted value); the core inject node never matches these words.
    const clear = async (): Promise<void> => {
      await search.press('Control+a')
      await search.press('Backspace')
    }
    const filterBy = async (word: string): Promise<string[]> => {
      await clear()
      await page.waitForFunction(
        () => !document.querySelector('.red-ui-palette-node[data-palette-type="inject"]')?.hasAttribute('data-filter'),
      )
      await search.pressSequentially(word)
      await page.waitForFunction(
        () =>
          document.querySelector('.red-ui-palette-node[data-palette-type="inject"]')?.getAttribute('data-filter') ===
          'true',
      )
      return shown()
    }
    for (const word of ['statestore', 'aio', 'state']) {
      const found = await filterBy(word)
      for (const type of PALETTE_TYPES) assert.ok(found.includes(type), `"${word}" finds ${type}: ${found.join(', ')}`)
      if (word === 'state') {
        // Categories with nothing that matches fold away; only "state store" stays.
        await page.waitForFunction(
          () =>
            [...document.querySelectorAll<HTMLElement>('.red-ui-palette-category')].filter(
              (c) => c.offsetParent !== null,
            ).length === 1,
        )
        await editor.screenshot('first-hour-palette-search-state', page.locator('#red-ui-sidebar-left'))
      }
    }
    const watch = await filterBy('watch')
    assert.ok(watch.includes('ss-watch') && !watch.includes('ss-get'), `"watch" finds ss-watch: ${watch.join(', ')}`)
    assert.ok(watch.includes('watch'), `"watch" finds core's file watch too: ${watch.join(', ')}`)
    await clear()
    await page.waitForFunction(
      () => !document.querySelector('.red-ui-palette-node[data-palette-type="inject"]')?.hasAttribute('data-filter'),
    )
    // No palette label of ours is one a core node uses (core's file watch is "watch"), so a search that finds both tells them apart.
    const labels = await page
      .locator('.red-ui-palette-node')
      .evaluateAll((els) =>
        els.map((el) => [
          el.getAttribute('data-palette-type') ?? '',
          el.querySelector('.red-ui-palette-label')?.textContent?.replace(/\s+/g, ' ').trim() ?? '',
        ]),
      )
    for (const type of PALETTE_TYPES) {
      const label = labels.find(([t]) => t === type)?.[1]
      assert.ok(label, `${type} has a palette label`)
      const same = labels.filter(([t, l]) => l === label && t !== type).map(([t]) => t)
      assert.deepEqual(same, [], `${type}'s palette label "${label}" is used by ${same.join(', ')}`)
    }
  })

  it('a node dropped from the palette takes the only state store: valid at once, selected in its dialog', async function () {
    await editor.addWorkspace()
    await editor.onlyPaletteCategory('state store')
    getId = await editor.dropFromPalette('ss-get', 300, 120)
    const [config] = await editor.configNodes('ss-config')
    assert.ok(await editor.isValid(getId), 'no red triangle, nothing for Deploy to warn about')
    await editor.edit(getId)
    assert.equal(await editor.field('node-input', 'store').inputValue(), config!.id)
    await editor.screenshot('first-hour-new-node-dialog', editor.tray())
    await editor.cancel()
    assert.deepEqual(await editor.invalidNodes(), [])
    await editor.screenshot('first-hour-new-node-canvas', editor.page.locator('#red-ui-workspace'))
  })

  it('an uncaught error reads as one line in Debug, and the status names it', async function () {
    const page = editor.page
    await page.evaluate((target) => {
      RED.view.importNodes(
        [
          {
            id: 'firsthourinject',
            type: 'inject',
            name: 'empty key',
            props: [
              { p: 'payload', v: '', vt: 'date' },
              { p: 'topic', v: '', vt: 'str' },
            ],
            repeat: '',
            crontab: '',
            once: false,
            onceDelay: 0.1,
            topic: '',
            payload: '',
            payloadType: 'date',
            x: 130,
            y: 220,
            wires: [[target]],
          },
        ],
        { generateIds: false, touchImport: true },
      )
    }, getId)
    // Wire it to the node dropped before, unless the import already did.
    await page.evaluate((target) => {
      const r = RED as unknown as {
        nodes: { node(id: string): unknown; addLink(l: unknown): void; filterLinks(f: unknown): unknown[] }
        view: { redraw(b: boolean): void }
      }
      const source = r.nodes.node('firsthourinject')
      const get = r.nodes.node(target)
      if (source && get && r.nodes.filterLinks({ source, target: get }).length === 0)
        r.nodes.addLink({ source, sourcePort: 0, target: get })
      r.view.redraw(true)
    }, getId)
    await editor.deploy()
    await page.locator('#red-ui-sidebar-debug-clear').click()
    await editor.pressButton('firsthourinject')
    // A full deploy restarts the examples too: the leader election may print after the clear.
    const message = page
      .locator('#red-ui-sidebar .red-ui-debug-msg', { hasText: String(catalogue.common.errors.keyEmpty).slice(0, 16) })
      .last()
    await message.waitFor()
    const shown = ((await message.locator('.red-ui-debug-msg-payload').textContent()) ?? '').trim()
    // The sidebar quotes a string; under 80 characters it shows it whole, on one line.
    assert.equal(shown, `"${catalogue.common.errors.keyEmpty}"`, 'what failed and why, on one line')
    assert.ok(!shown.includes('[object Object]'))
    await page.waitForFunction(
      ({ id, want }) =>
        document.querySelector(`[id="${id}"] text.red-ui-flow-node-status-label`)?.textContent?.trim() === want,
      {
        id: getId,
        want: `error: ${catalogue.common.failure.KeyEmpty}`,
      },
    )
    assert.deepEqual(await editor.status(getId), { text: 'error: key is empty', fill: 'red' })
    // Notifications (imported, deployed, injected) would cover the nodes in the picture.
    await editor.dismissNotifications().catch(() => undefined)
    await page
      .locator('.red-ui-notification')
      .first()
      .waitFor({ state: 'detached', timeout: scaled(15000) })
    await editor.screenshot('first-hour-uncaught-error', page.locator('#red-ui-main-container'))
  })

  it('the config dialog shows what ${AIO_STATESTORE_URL} is, and Test connection says connected or refused', async function () {
    const brokerUrl = /broker ready at (mqtt:\/\/\S+)/.exec(session!.red.output)?.[1]
    assert.ok(brokerUrl, 'npm start printed its broker URL')
    await editor.edit(getId)
    await editor.openConfig('store', 'edit')
    const tray = editor.tray()
    assert.equal(await editor.field('node-config-input', 'broker').inputValue(), '${AIO_STATESTORE_URL}')
    const resolved = tray.locator('#ss-config-broker-resolved')
    await resolved.waitFor()
    assert.equal((await resolved.textContent())?.trim(), `${catalogue['ss-config'].tip.resolved} ${brokerUrl}`)

    const result = tray.locator('#ss-config-test-result')
    await tray.locator('#ss-config-test').click()
    await editor.page.waitForFunction(() =>
      /ss-config-test-(ok|failed)/.test(document.querySelector('#ss-config-test-result')?.className ?? ''),
    )
    assert.equal((await result.textContent())?.trim(), catalogue['ss-config'].test.connected)
    await editor.screenshot('first-hour-config-dialog', tray)

    await editor.setText('node-config-input', 'broker', `mqtt://127.0.0.1:${await freePort()}`)
    assert.ok(!(await resolved.isVisible()), 'a literal URL needs no resolving')
    await tray.locator('#ss-config-test').click()
    await editor.page.waitForFunction(
      () => document.querySelector('#ss-config-test-result')?.classList.contains('ss-config-test-failed') === true,
    )
    assert.match(
      (await result.textContent()) ?? '',
      new RegExp(`^${catalogue['ss-config'].test.refused}: .*ECONNREFUSED`),
    )
    await editor.screenshot('first-hour-config-dialog-refused', tray)
    await editor.configCancel()
    await editor.cancel()
  })

  it('inject → set → get → debug, as the palette drops them with one fixed Key each: Debug shows the value read back', async function () {
    const page = editor.page
    await editor.addWorkspace()
    // Found as a user finds them, through the palette's search (it opens the categories with a match).
    const search = page.locator('#red-ui-palette-search input')
    const drop = async (type: string, word: string, x: number): Promise<string> => {
      await search.press('Control+a')
      await search.press('Backspace')
      await search.pressSequentially(word)
      await page.locator(`.red-ui-palette-node[data-palette-type="${type}"]:visible`).waitFor()
      return editor.dropFromPalette(type, x, 80)
    }
    const injectId = await drop('inject', 'inject', 120)
    const setId = await drop('ss-set', 'set key', 320)
    const getId2 = await drop('ss-get', 'get key', 520)
    const debugId = await drop('debug', 'debug', 720)
    await search.press('Control+a')
    await search.press('Backspace')
    // The settings changed: each node's Key, the same fixed string (their default reads msg.topic, which
    // the inject leaves empty; the get reads only what its own Key names, never the key the set left in msg.key).
    for (const id of [setId, getId2]) {
      await editor.edit(id)
      await editor.setTyped('node-input', 'key', 'str', 'first-hour/e2e')
      await editor.done()
    }
    await page.evaluate(
      (ids) => {
        const r = RED as unknown as {
          nodes: { node(id: string): unknown; addLink(l: unknown): void }
          view: { redraw(b: boolean): void }
        }
        for (const [from, to] of [
          [ids[0], ids[1]],
          [ids[1], ids[2]],
          [ids[2], ids[3]],
        ] as const) {
          r.nodes.addLink({ source: r.nodes.node(from!), sourcePort: 0, target: r.nodes.node(to!) })
        }
        r.view.redraw(true)
      },
      [injectId, setId, getId2, debugId],
    )
    assert.deepEqual(await editor.invalidNodes(), [])
    await editor.deploy()
    await page.evaluate(() => RED.sidebar.show('debug'))
    await page.locator('#red-ui-sidebar-debug-clear').click()
    const pressedAt = Date.now()
    await editor.pressButton(injectId)
    // The debug node's own line (the examples' leader election may print meanwhile): the inject's timestamp, read back by the get node.
    const line = page.locator(`#red-ui-sidebar .red-ui-debug-msg-node-${debugId.replace(/\./g, '_')}`).last()
    await line.waitFor()
    const shown = ((await line.locator('.red-ui-debug-msg-payload').textContent()) ?? '').trim()
    assert.match(shown, /^\d{13}$/, `a timestamp, not an error: ${shown}`)
    assert.ok(Math.abs(Number(shown) - pressedAt) < 60_000, `the value just written: ${shown}`)
    assert.equal((await editor.status(getId2)).text, 'found')
    await editor.dismissNotifications().catch(() => undefined)
    await editor.screenshot('first-hour-inject-set-get-debug', page.locator('#red-ui-main-container'))
  })

  it('left nothing in the Node-RED log at error level but the uncaught error made on purpose', function () {
    assert.deepEqual(
      session!.red.errors().filter((line) => !line.endsWith(`[ss-get:${getId}] ${catalogue.common.errors.keyEmpty}`)),
      [],
    )
  })
})
