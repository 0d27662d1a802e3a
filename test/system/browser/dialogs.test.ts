// The node dialogs as a user opens them (`npm start`, chromium): a node saved before a setting
// existed shows the value it runs with, not a grey placeholder, and no label wraps onto two lines.
import { strict as assert } from 'node:assert'
import { SCHEMAS } from '../../../nodes/config/schemas'
import { catalogue } from './catalogue'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'

declare const RED: {
  view: { importNodes(nodes: unknown[], options: Record<string, unknown>): void }
  workspaces: { active(): string }
  nodes: { eachConfig(cb: (n: { id: string; type: string }) => void): void }
}

/** Labels of the open dialog taller than one line of their own text. */
async function wrappedLabels(session: OpenedEditor): Promise<string[]> {
  return session.editor.page.evaluate(() =>
    [...document.querySelectorAll<HTMLLabelElement>('.red-ui-tray .form-row > label')]
      .filter((l) => l.offsetParent !== null && l.textContent.trim() !== '')
      .filter((l) => l.getBoundingClientRect().height > parseFloat(getComputedStyle(l).lineHeight) * 1.5)
      .map((l) => l.textContent.trim()),
  )
}

describe('node dialogs: values and labels (npm start, chromium)', function () {
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

  it('update key saved without Compute for at most shows its 1000 ms as a value, like Wait up to, and no label wraps', async function () {
    const editor = session!.editor
    await editor.page.evaluate(() => {
      let store = ''
      RED.nodes.eachConfig((n) => {
        if (n.type === 'ss-config' && !store) store = n.id
      })
      // As a flow saved before the setting existed: no exprTimeout, no timeout.
      RED.view.importNodes(
        [
          {
            id: 'dialogsupdate1',
            type: 'ss-update',
            z: RED.workspaces.active(),
            store,
            key: 'k',
            keyType: 'str',
            expression: 'value + 1',
            initial: '0',
            initialType: 'num',
            x: 200,
            y: 400,
            wires: [[]],
          },
        ],
        { generateIds: false, touchImport: true },
      )
    })
    await editor.edit('dialogsupdate1')
    assert.equal(await editor.page.locator('#node-input-exprTimeout').inputValue(), '1000')
    assert.equal(await editor.page.locator('#node-input-timeout').inputValue(), '10000')
    assert.deepEqual(await wrappedLabels(session!), [])
    await editor.cancel()
  })

  it("the lock dialog's Hold at most and Holders at most stay on one line", async function () {
    const editor = session!.editor
    await editor.page.evaluate(() => {
      let store = ''
      RED.nodes.eachConfig((n) => {
        if (n.type === 'ss-config' && !store) store = n.id
      })
      RED.view.importNodes(
        [
          {
            id: 'dialogslock1',
            type: 'ss-lock',
            z: RED.workspaces.active(),
            store,
            key: 'k',
            keyType: 'str',
            mode: 'lock',
            action: 'acquire',
            x: 200,
            y: 480,
            wires: [[], []],
          },
        ],
        { generateIds: false, touchImport: true },
      )
    })
    await editor.edit('dialogslock1')
    await editor.page.locator('#node-input-holdMs').waitFor({ state: 'visible' })
    assert.deepEqual(await wrappedLabels(session!), [])
    await editor.cancel()
  })

  it('the lock dialog shows every number a node saved without it runs with, and a cleared one says it is the default', async function () {
    const editor = session!.editor
    // As a flow written before these settings existed, or by hand: none of them set.
    await editor.page.evaluate(() => {
      let store = ''
      RED.nodes.eachConfig((n) => {
        if (n.type === 'ss-config' && !store) store = n.id
      })
      RED.view.importNodes(
        [
          {
            id: 'dialogslock2',
            type: 'ss-lock',
            z: RED.workspaces.active(),
            store,
            key: 'k',
            keyType: 'str',
            mode: 'once',
            action: 'acquire',
            x: 200,
            y: 560,
            wires: [[], []],
          },
        ],
        { generateIds: false, touchImport: true },
      )
    })
    await editor.edit('dialogslock2')
    const said = (catalogue('ss-config') as { common: { label: { defaultValue: string } } }).common.label.defaultValue
    const defaults = SCHEMAS['ss-lock'].defaults
    // Each in a mode that shows it: Keep done for in run once, Holders at most and Queue in lock mode.
    for (const [name, mode] of [
      ['leaseMs', 'once'],
      ['timeout', 'once'],
      ['holdMs', 'once'],
      ['keepMs', 'once'],
      ['limit', 'lock'],
      ['queue', 'lock'],
    ] as const) {
      await editor.page.locator('#node-input-mode').selectOption(mode)
      const field = editor.page.locator(`#node-input-${name}`)
      const runsWith = String(defaults[name].value)
      assert.equal(await field.inputValue(), runsWith, `${name} shows the ${runsWith} it runs with`)
      await field.fill('')
      assert.equal(
        await field.getAttribute('placeholder'),
        said.replace('__value__', runsWith),
        `${name} cleared says it is the default`,
      )
    }
    assert.deepEqual(await wrappedLabels(session!), [])
    await editor.cancel()
  })

  it('get key saved before the key-list settings existed shows Several keys, In flight and Max keys per msg as values', async function () {
    const editor = session!.editor
    // As the examples' get nodes were saved: no sendAs, inFlight, maxKeys.
    await editor.page.evaluate(() => {
      let store = ''
      RED.nodes.eachConfig((n) => {
        if (n.type === 'ss-config' && !store) store = n.id
      })
      RED.view.importNodes(
        [
          {
            id: 'dialogsget1',
            type: 'ss-get',
            z: RED.workspaces.active(),
            store,
            key: 'k',
            keyType: 'str',
            mode: 'value',
            x: 200,
            y: 640,
            wires: [[]],
          },
        ],
        { generateIds: false, touchImport: true },
      )
    })
    await editor.edit('dialogsget1')
    const defaults = SCHEMAS['ss-get'].defaults
    const said = (catalogue('ss-config') as { common: { label: { defaultValue: string } } }).common.label.defaultValue
    assert.equal(await editor.page.locator('#node-input-sendAs').inputValue(), defaults.sendAs.value)
    for (const name of ['inFlight', 'maxKeys'] as const) {
      const field = editor.page.locator(`#node-input-${name}`)
      const runsWith = String(defaults[name].value)
      assert.equal(await field.inputValue(), runsWith, `${name} shows the ${runsWith} it runs with`)
      await field.fill('')
      assert.equal(await field.getAttribute('placeholder'), said.replace('__value__', runsWith))
    }
    await editor.cancel()
  })
})

/** The rows of the lock dialog that depend on the mode, by the id of their row. */
const LOCK_ROWS = {
  timeout: '#ss-lock-row-timeout',
  holdMs: '#ss-lock-row-holdMs',
  keepMs: '#ss-lock-row-keepMs',
  queue: '#ss-lock-row-queue',
  limit: '#ss-lock-row-limit',
  autoRenew: '#ss-lock-row-renew',
  campaign: '#ss-lock-row-campaign',
  tipLease: '#ss-lock-tip-lease',
  tipLeader: '#ss-lock-tip-leader',
  tipGate: '#ss-lock-tip-gate',
  tipOnce: '#ss-lock-tip-once',
} as const
type LockRow = keyof typeof LOCK_ROWS

/** What each mode shows of those rows; the others are hidden. */
const SHOWN_IN: Record<string, LockRow[]> = {
  lease: ['autoRenew', 'tipLease'],
  lock: ['timeout', 'holdMs', 'queue', 'limit', 'autoRenew', 'tipLease'],
  leader: ['campaign', 'tipLeader'],
  gate: ['campaign', 'tipGate'],
  once: ['timeout', 'holdMs', 'keepMs', 'tipOnce'],
}

describe('the lock dialog: each mode its rows, the values through a deploy (npm start, chromium)', function () {
  this.timeout(240000)
  let session: OpenedEditor | null = null

  before(async function () {
    requireChromium(this)
    session = await openEditor(60000, { startArgs: ['--memory'] })
  })
  after(async () => session?.close())
  afterEach(async function () {
    await checkPage(this, session)
  })

  async function visibleRows(): Promise<LockRow[]> {
    const shown: LockRow[] = []
    for (const [row, selector] of Object.entries(LOCK_ROWS) as Array<[LockRow, string]>)
      if (await session!.editor.tray().locator(selector).isVisible()) shown.push(row)
    return shown
  }

  async function importLock(id: string, y: number): Promise<void> {
    await session!.editor.page.evaluate(
      ({ nid, ny }) => {
        let store = ''
        RED.nodes.eachConfig((n) => {
          if (n.type === 'ss-config' && !store) store = n.id
        })
        // As the palette drops it: the schema's defaults, lease mode.
        RED.view.importNodes(
          [
            {
              id: nid,
              type: 'ss-lock',
              z: RED.workspaces.active(),
              store,
              key: 'k',
              keyType: 'str',
              x: 200,
              y: ny,
              wires: [[], []],
            },
          ],
          { generateIds: false, touchImport: true },
        )
      },
      { nid: id, ny: y },
    )
  }

  it('choosing each mode shows its rows and hides the others: leader gate, run once, lock with Holders at most', async function () {
    const editor = session!.editor
    await importLock('dialogsmodes1', 560)
    await editor.edit('dialogsmodes1')
    // Every mode, and back again: what a mode shows does not depend on the mode before it.
    for (const mode of ['lease', 'lock', 'leader', 'gate', 'once', 'lock', 'gate', 'lease', 'once', 'leader']) {
      await editor.tray().locator('#node-input-mode').selectOption(mode)
      assert.deepEqual((await visibleRows()).sort(), [...SHOWN_IN[mode]!].sort(), `mode ${mode}`)
    }
    await editor.cancel()
  })

  it('the settings of a leader gate, a run once and a semaphore, set in the dialog, are deployed and shown again after a reload', async function () {
    const editor = session!.editor
    const settings: Record<string, { mode: string; key: string; text: Record<string, string>; campaign?: boolean }> = {
      dialogsgate1: { mode: 'gate', key: 'replicas/tick-leader', text: { leaseMs: '4000' }, campaign: false },
      dialogsonce1: {
        mode: 'once',
        key: '',
        text: { leaseMs: '5000', timeout: '7000', holdMs: '20000', keepMs: '3600000' },
      },
      dialogssem1: {
        mode: 'lock',
        key: 'replicas/api-slots',
        text: { limit: '2', queue: '50', timeout: '9000', holdMs: '3000' },
      },
    }
    let y = 640
    for (const [id, s] of Object.entries(settings)) {
      await importLock(id, (y += 60))
      await editor.edit(id)
      await editor.tray().locator('#node-input-mode').selectOption(s.mode)
      await editor.setTyped('node-input', 'key', 'str', s.key)
      for (const [prop, value] of Object.entries(s.text)) await editor.setText('node-input', prop, value)
      if (s.campaign !== undefined) await editor.tray().locator('#node-input-campaign').setChecked(s.campaign)
      await editor.done()
      assert.equal(await editor.isValid(id), true, `${id} is valid`)
    }
    await editor.deploy()

    // What the runtime keeps: the flows it runs.
    const res = await fetch(`${editor.url}/flows`, { headers: { 'Node-RED-API-Version': 'v1' } })
    const flows = (await res.json()) as Array<Record<string, unknown>>
    for (const [id, s] of Object.entries(settings)) {
      const saved = flows.find((n) => n.id === id)
      assert.ok(saved, `${id} deployed`)
      assert.deepEqual(
        { mode: saved.mode, key: saved.key, ...Object.fromEntries(Object.keys(s.text).map((p) => [p, saved[p]])) },
        { mode: s.mode, key: s.key, ...s.text },
        id,
      )
      if (s.campaign !== undefined) assert.equal(saved.campaign, s.campaign, `${id} campaign`)
    }

    // A new editor session reads them back from the runtime and shows them in the dialog.
    await editor.open()
    for (const [id, s] of Object.entries(settings)) {
      await editor.edit(id)
      assert.equal(await editor.tray().locator('#node-input-mode').inputValue(), s.mode, `${id} mode`)
      assert.deepEqual(await editor.typedValue('node-input', 'key'), { type: 'str', value: s.key }, `${id} key`)
      for (const [prop, value] of Object.entries(s.text))
        assert.equal(await editor.field('node-input', prop).inputValue(), value, `${id} ${prop}`)
      if (s.campaign !== undefined)
        assert.equal(await editor.tray().locator('#node-input-campaign').isChecked(), s.campaign, `${id} campaign`)
      assert.deepEqual((await visibleRows()).sort(), [...SHOWN_IN[s.mode]!].sort(), `${id} rows`)
      await editor.cancel()
    }
  })
})
