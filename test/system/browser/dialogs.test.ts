// The node dialogs as a user opens them (`npm start`, chromium): a node saved before a setting
// existed shows the value it runs with, not a grey placeholder, and no label wraps onto two lines.
import { strict as assert } from 'node:assert'
import { SCHEMAS } from '../../../nodes/lib/schemas'
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
