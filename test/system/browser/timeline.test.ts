// The sidebar's timeline as a user meets it: `npm start` (runtime A, its editor in chromium) and a
// second Node-RED runtime (B) on the same broker, each with a lock-mode flow on one lock name whose
// hold lasts a moment. Pressed in turn, the lock passes between the runtimes while msgs wait: the
// timeline draws both holders, the hand-overs and the waiting msgs, and a watched key's numeric
// values as a chart. A hold of A released in another runtime leaves the lock shown free.
// The screenshot is docs/images/sidebar-timeline.png (copied from artifacts/browser/).
import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  FROM_WORKING_TREE,
  RED_JS,
  runtimeSettings,
  startNodeRed,
  writeSettings,
  type NodeRedChild,
} from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src/client'
import { openSidebar } from './editor'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'
import { shot, text } from './sidebar-support'
import { scaled } from '../../support/deadline'
import { eventually, until } from '../../support/wait'

const LINE = 'timeline/line-1'
const QUICK = 'timeline/quick'
const WATCHED = 'examples/thermostat/setpoint'

/** A lock-mode flow: inject `press` → lock `key` → hold `holdMs` (a delay) → release; the release also leaves by `released`. */
function holdFlow(
  tab: string,
  store: string,
  prefix: string,
  holdMs: number,
  key = LINE,
): Array<Record<string, unknown>> {
  const id = (n: string) => `${prefix}${n}`
  return [
    {
      id: id('press'),
      type: 'inject',
      z: tab,
      name: `${prefix} presses`,
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      x: 120,
      y: 60,
      wires: [[id('take')]],
    },
    {
      id: id('take'),
      type: 'ss-lock',
      z: tab,
      name: `${prefix} takes the line`,
      store,
      key,
      keyType: 'str',
      mode: 'lock',
      action: 'acquire',
      holder: '',
      timeout: '30000',
      holdMs: '10000',
      x: 320,
      y: 60,
      wires: [[id('work')], []],
    },
    {
      id: id('work'),
      type: 'delay',
      z: tab,
      name: '',
      pauseType: 'delay',
      timeout: String(holdMs),
      timeoutUnits: 'milliseconds',
      x: 520,
      y: 60,
      wires: [[id('free')]],
    },
    {
      id: id('free'),
      type: 'ss-lock',
      z: tab,
      name: `${prefix} frees the line`,
      store,
      key: '',
      keyType: 'str',
      mode: 'lease',
      action: 'release',
      x: 720,
      y: 60,
      wires: [[], []],
    },
  ]
}

async function post(url: string, body?: unknown): Promise<Response> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Node-RED-Deployment-Type': 'flows' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`)
  return res
}

describe('editor: the sidebar timeline of locks across two runtimes (chromium)', function () {
  this.timeout(240000)
  let session: OpenedEditor | null = null
  let b: NodeRedChild | null = null
  let bDir = ''
  let outside: StateStoreClient
  let aUrl = ''

  before(async function () {
    requireChromium(this)
    session = await openEditor(60000, { startArgs: ['--memory'] })
    aUrl = session.red.url
    const brokerUrl = /broker ready at (mqtt:\/\/\S+)/.exec(session.red.output)?.[1]
    assert.ok(brokerUrl, 'npm start names its broker')
    outside = new StateStoreClient({ brokerUrl, clientId: `timeline-outside-${process.pid}` })
    await outside.ready({ timeoutMs: 10000 })
    // Runtime A: a tab of its own beside the examples, on the examples' store.
    const store = await session.editor.page.evaluate(() => {
      let id = ''
      ;(
        window as unknown as { RED: { nodes: { eachConfig(cb: (n: { id: string; type: string }) => void): void } } }
      ).RED.nodes.eachConfig((n) => {
        if (n.type === 'ss-config' && !id) id = n.id
      })
      return id
    })
    await post(`${aUrl}/flow`, { label: 'Line 1 (A)', nodes: holdFlow('', store, 'A', 1500) })
    await post(`${aUrl}/flow`, { label: 'Quick (A)', nodes: holdFlow('', store, 'Q', 3, QUICK) })
    // Runtime B: Node-RED 5 with the package from the working tree, on A's broker.
    bDir = mkdtempSync(join(tmpdir(), 'aio-ss-timeline-b-'))
    const settingsFile = join(bDir, 'settings.js')
    writeSettings(settingsFile, runtimeSettings({ ...FROM_WORKING_TREE }))
    writeFileSync(
      join(bDir, 'flows.json'),
      JSON.stringify([
        { id: 'tabB', type: 'tab', label: 'Line 1 (B)' },
        { id: 'cfgB', type: 'ss-config', name: 'plant', broker: brokerUrl, clientId: 'runtime-b' },
        ...holdFlow('tabB', 'cfgB', 'B', 1500),
      ]),
    )
    b = await startNodeRed({
      redJs: RED_JS[5],
      userDir: bDir,
      port: await freePort(),
      settingsFile,
      ready: (_url, log) => log.includes('connected to the state store'),
      timeoutMs: 60000,
    })
    await openSidebar(session.editor.page)
  })

  after(async () => {
    await outside?.close()
    await b?.stop()
    if (bDir) rmSync(bDir, { recursive: true, force: true })
    await session?.close()
  })

  afterEach(async function () {
    await checkPage(this, session)
  })

  it('draws who held the lock when, the hand-overs between the runtimes and the msgs waiting', async function () {
    const page = session!.editor.page
    const press = (runtime: 'A' | 'B') => post(`${runtime === 'A' ? aUrl : b!.url}/inject/${runtime}press`)
    // Each runtime presses while the other holds: its msg waits, then takes over (A → B → A → B).
    const holds = async (runtime: 'A' | 'B') =>
      until(
        async () => {
          const value = (await outside.get(LINE)).value?.toString()
          return value !== undefined && value.startsWith('runtime-b/') === (runtime === 'B')
        },
        `${runtime} holds the line`,
        30000,
      )
    await press('A')
    await holds('A')
    await press('B')
    await holds('B')
    await press('A')
    await holds('A')
    await press('B')
    await holds('B')
    const lock = page.locator(`.ss-sidebar-timeline-lock[data-lock="${LINE}"]`)
    await until(
      async () => Number((await lock.getAttribute('data-handovers', { timeout: 20000 })) ?? 0) >= 3,
      'three hand-overs drawn',
      60000,
    )
    const holders = await lock.locator('.ss-sidebar-timeline-holder').allTextContents()
    assert.equal(holders.length, 2, `two holders, one per runtime: ${holders.join(' | ')}`)
    assert.equal(
      holders.filter((h) => h.endsWith(text('timeline.ours', { holder: '' }).trim())).length,
      1,
      'one of them is this runtime',
    )
    assert.ok(
      holders.some((h) => h.startsWith('runtime-b/')),
      `the other is runtime B's node: ${holders.join(' | ')}`,
    )
    assert.ok((await lock.locator('rect.ss-sidebar-tl-hold').count()) >= 4, 'a span per hold')
    assert.ok((await lock.locator('line.ss-sidebar-tl-handover').count()) >= 3, 'a mark per hand-over')
    await lock.locator('polyline.ss-sidebar-tl-waiting').waitFor({ state: 'attached' })
    assert.equal(
      await lock.locator('.ss-sidebar-timeline-most').textContent(),
      text('timeline.waiting_one', { count: 1 }),
      'a msg waited at A while B held, and one at B while A held',
    )
  })

  it("draws a watched key's numeric values as a chart", async function () {
    const page = session!.editor.page
    // A thermostat turned over some seconds (the pauses only spread the points over the chart).
    for (const celsius of [19.5, 21, 20.25, 22.5, 21.75]) {
      await outside.set(WATCHED, JSON.stringify({ celsius }))
      await new Promise((r) => setTimeout(r, 700))
    }
    const chart = page.locator(`.ss-sidebar-timeline-value[data-key="${WATCHED}"]`)
    await until(
      async () => Number((await chart.getAttribute('data-points', { timeout: 20000 })) ?? 0) >= 5,
      'five values charted',
      30000,
    )
    assert.match((await chart.locator('.ss-sidebar-timeline-head').textContent()) ?? '', /19\.5 – 22\.5/)
    await shot(page, 'sidebar-timeline', '.ss-sidebar-timeline-heading')
  })

  it('a hold of this runtime released in the other runtime leaves the lock shown free, not "waiting"', async function () {
    const page = session!.editor.page
    await post(`${aUrl}/inject/Apress`)
    const held = await eventually(
      async () => (await outside.get(LINE)).value?.toString() ?? undefined,
      'A holds the line',
      20000,
    )
    // What a release node in the other runtime does with the msg.lock it carries: delete the key if it holds that hold's value.
    assert.equal((await outside.vdel(LINE, held)).deleted, 1)
    const row = page.locator(`.ss-sidebar-lock[data-lock="${LINE}"] .ss-sidebar-lock-holder .ss-sidebar-value`).first()
    await until(async () => ((await row.textContent()) ?? '') === text('lock.free'), 'the lock shown free', 20000)
    // It stays free once A's flow has run on (its release, 1.5 s on, finds nothing to release): an
    // absence, so a wait of its own; nothing later may turn it into "waiting (the key was deleted …)".
    await new Promise((r) => setTimeout(r, 2500))
    assert.equal(await row.textContent(), text('lock.free'))
  })

  it('a hold of a few ms is drawn wide enough to see and listed with its length in ms', async function () {
    const page = session!.editor.page
    await post(`${aUrl}/inject/Qpress`)
    const lock = page.locator(`.ss-sidebar-timeline-lock[data-lock="${QUICK}"]`)
    const listed = lock.locator('.ss-sidebar-timeline-hold').first()
    await listed.waitFor({ state: 'attached', timeout: scaled(30000) })
    // The hold ended (a 3 ms delay and the release's round trip): its length is fixed.
    await until(async () => ((await listed.getAttribute('data-to')) ?? '') !== '', 'the quick hold ended', 30000)
    const length = Number(await listed.getAttribute('data-ms'))
    assert.ok(Number.isInteger(length) && length >= 3, `a hold of at least the delay: ${length} ms`)
    const named = length < 1000 ? text('time.ms', { n: length }) : text('time.s', { n: (length / 1000).toFixed(1) })
    assert.ok(
      ((await listed.locator('.ss-sidebar-timeline-hold-length').textContent()) ?? '').startsWith(named),
      `the list names the hold's ${named}`,
    )
    const rect = lock.locator('rect.ss-sidebar-tl-hold').last()
    assert.equal(await rect.getAttribute('data-ms'), String(length), 'the last drawn hold is the one listed')
    assert.ok(((await rect.locator('title').textContent()) ?? '').includes(named), 'its tooltip names its length')
    const box = await rect.boundingBox()
    assert.ok(box && box.width >= 2.5, `drawn at least 2.5 px wide: ${box?.width} px`)
    await shot(page, 'sidebar-timeline-quick', `.ss-sidebar-timeline-lock[data-lock="${QUICK}"]`)
  })
})
