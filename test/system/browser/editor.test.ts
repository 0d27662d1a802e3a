// The editor as users meet it: `npm start` (the example flows deployed), Debian's chromium,
// the palette, every node's edit dialog (fields, typed inputs, defaults, hints, invalid input,
// labels), the help sidebar, Deploy and the status under each node. The page must log no error
// and no request may fail while this happens. Screenshots go to artifacts/browser/.
import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Editor, type NodeInfo } from './editor'
import { checkPage, openEditor, requireChromium, type OpenedEditor } from './session'
import { freshArtifacts } from './support'
import { repoRoot } from '../smoke/node-red'
import { catalogue, type Catalogue } from './catalogue'

const PALETTE_TYPES = ['ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-update', 'ss-watch'] as const
type PaletteType = (typeof PALETTE_TYPES)[number]
const CONFIG = 'ss-config'
const PREFIX = 'node-input'
const CONFIG_PREFIX = 'node-config-input'

// The typed-input menus users get, in order.
const KEY_TYPES = ['str', 'msg', 'flow', 'global', 'env', 'jsonata']
const VALUE_TYPES = ['msg', 'flow', 'global', 'str', 'num', 'bool', 'json', 'bin', 'env', 'jsonata']
const TOKEN_TYPES = ['none', 'msg', 'flow', 'global', 'str', 'env', 'jsonata']

// The English catalogues and help, as shipped: what the editor must show.
function text(cat: Catalogue, path: string): string {
  const value = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], cat)
  if (typeof value !== 'string') throw new Error(`no catalogue text ${path}`)
  return value
}
const common = catalogue(CONFIG)
/** The help's first line, which Node-RED also uses as the palette tooltip. */
function helpSummary(type: string): string {
  const html = readFileSync(join(repoRoot, 'nodes', 'locales', 'en-US', `${type}.html`), 'utf8')
  const body = html.replace(/^<script[^>]*>\s*/, '')
  return (body.split('\n')[0] ?? '').trim()
}

interface Spec {
  /** typedInput property -> the menu it must offer. */
  typed: Record<string, string[]>
  /** What a new node's dialog shows before the user touches it (value, or type + value). */
  shows: Record<string, string | boolean | { type: string; value: string }>
  /** Brings hidden fields into view (a mode that uses them) before their menus are checked. */
  reveal?: (e: Editor) => Promise<void>
  /** Hint texts (catalogue paths) that must be visible in a new node's dialog. */
  hints: Array<[Catalogue, string]>
  /** Invalid input and the field that must be marked. */
  invalid: Array<{ what: string; apply: (e: Editor) => Promise<void>; typed: boolean; prop: string }>
  /** An edit of the example node and the canvas label it must produce. */
  edit: (e: Editor) => Promise<void>
  label: string
  /** Output ports the edited node shows on the canvas. */
  ports: number
}

const emptyKey = {
  what: 'an empty key',
  apply: (e: Editor) => e.setTyped(PREFIX, 'key', 'str', ''),
  typed: true,
  prop: 'key',
}
const noConfig = {
  what: 'no state store selected',
  apply: (e: Editor) =>
    e
      .field(PREFIX, 'store')
      .selectOption('_ADD_')
      .then(() => undefined),
  typed: false,
  prop: 'store',
}

const SPECS: Record<PaletteType, Spec> = {
  'ss-get': {
    typed: { key: KEY_TYPES },
    shows: { key: { type: 'msg', value: 'topic' }, decode: 'auto', notFound: 'payload', name: '' },
    hints: [],
    invalid: [emptyKey, noConfig],
    edit: async (e) => {
      await e.setTyped(PREFIX, 'key', 'str', 'browser-get')
      await e.field(PREFIX, 'notFound').selectOption('output')
    },
    label: 'get browser-get',
    ports: 2,
  },
  'ss-set': {
    typed: { key: KEY_TYPES, value: VALUE_TYPES, fencingToken: TOKEN_TYPES },
    shows: {
      key: { type: 'msg', value: 'topic' },
      value: { type: 'msg', value: 'payload' },
      condition: 'always',
      expiry: '',
      persist: false,
      notApplied: 'same',
      overrides: true,
      name: '',
    },
    hints: [
      [catalogue('ss-set'), 'ss-set.tip.expiry'],
      [common, 'common.tip.fencingToken'],
    ],
    invalid: [
      emptyKey,
      { what: 'a negative expiry', apply: (e) => e.setText(PREFIX, 'expiry', '-5'), typed: false, prop: 'expiry' },
      {
        what: 'an expiry that is not a number',
        apply: (e) => e.setText(PREFIX, 'expiry', '10s'),
        typed: false,
        prop: 'expiry',
      },
      noConfig,
    ],
    edit: async (e) => {
      await e.setTyped(PREFIX, 'key', 'str', 'browser-set')
      await e.field(PREFIX, 'condition').selectOption('NX')
      await e.field(PREFIX, 'notApplied').selectOption('output')
    },
    label: 'set browser-set (NX)',
    ports: 2,
  },
  'ss-del': {
    typed: { key: KEY_TYPES, value: VALUE_TYPES, fencingToken: TOKEN_TYPES },
    shows: { key: { type: 'msg', value: 'topic' }, mode: 'delete', name: '' },
    // The value to compare is asked for only when deleting on a match.
    reveal: async (e) => {
      assert.ok(!(await e.typedContainer(PREFIX, 'value').isVisible()), 'no value field when deleting always')
      await e.field(PREFIX, 'mode').selectOption('vdel')
      assert.ok(await e.typedContainer(PREFIX, 'value').isVisible(), 'a value field when deleting on a match')
    },
    hints: [[common, 'common.tip.fencingToken']],
    invalid: [emptyKey, noConfig],
    edit: async (e) => {
      await e.setTyped(PREFIX, 'key', 'str', 'browser-del')
      await e.field(PREFIX, 'mode').selectOption('vdel')
    },
    label: 'delete if equal browser-del',
    ports: 1,
  },
  'ss-lock': {
    typed: { key: KEY_TYPES },
    shows: {
      key: { type: 'str', value: '' },
      mode: 'lease',
      action: 'acquire',
      holder: '',
      leaseMs: '10000',
      autoRenew: true,
      overrides: true,
      name: '',
    },
    hints: [[catalogue('ss-lock'), 'ss-lock.tip.lease']],
    invalid: [
      emptyKey,
      { what: 'a negative lease', apply: (e) => e.setText(PREFIX, 'leaseMs', '-1'), typed: false, prop: 'leaseMs' },
      {
        // A leader campaigns when the flow starts, before any msg exists to name the position.
        what: 'leader election with the key from the msg',
        apply: async (e) => {
          await e.field(PREFIX, 'mode').selectOption('leader')
          await e.setTyped(PREFIX, 'key', 'msg', 'topic')
        },
        typed: true,
        prop: 'key',
      },
      noConfig,
    ],
    edit: async (e) => {
      await e.field(PREFIX, 'mode').selectOption('lock')
      await e.setTyped(PREFIX, 'key', 'str', 'browser-lock')
    },
    label: 'lock browser-lock: acquire',
    ports: 2,
  },
  'ss-update': {
    typed: { key: KEY_TYPES, initial: ['num', 'str', 'json', 'bool'] },
    shows: {
      key: { type: 'msg', value: 'topic' },
      initial: { type: 'num', value: '0' },
      expression: 'value + 1',
      timeout: '10000',
      holder: '',
      persist: false,
      name: '',
    },
    hints: [],
    invalid: [emptyKey, noConfig],
    edit: async (e) => {
      await e.setTyped(PREFIX, 'key', 'str', 'browser-update')
    },
    label: 'update browser-update',
    ports: 1,
  },
  'ss-watch': {
    typed: {},
    shows: { keys: '', decode: 'auto', initial: false, overrides: true, name: '' },
    hints: [[catalogue('ss-watch'), 'ss-watch.tip.keys']],
    invalid: [noConfig],
    edit: async (e) => {
      await e.field(PREFIX, 'keys').fill('alpha\nbeta\ngamma')
    },
    label: 'watch alpha, beta +1',
    ports: 1,
  },
}

/** Every field a node definition declares must be in its dialog, showing the declared default. */
async function assertDefaultsRendered(editor: Editor, type: string, prefix: string): Promise<void> {
  const wrong = (await editor.fieldDefaults(type, prefix))
    .filter((f) => f.shown !== f.expected)
    .map((f) => `${f.prop} (${f.kind}): shows ${JSON.stringify(f.shown)}, default ${JSON.stringify(f.expected)}`)
  assert.deepEqual(wrong, [], `${type}: fields not showing their defaults`)
}

/** No label, option, hint or placeholder may show a raw catalogue key (a missing translation). */
async function assertTranslated(editor: Editor, type: string): Promise<void> {
  const raw = await editor.tray().evaluate((tray) => {
    const texts = [tray.textContent ?? '']
    tray.querySelectorAll('[placeholder]').forEach((el) => texts.push(el.getAttribute('placeholder') ?? ''))
    return (
      texts
        .join('\n')
        .match(
          /(node-red-contrib-aio-statestore\/|\b(?:ss-(?:config|get|set|del|lock|watch)|common)\.(?:label|tip|placeholder|tabs|mode|action|condition|decode|outputs)\.)\S*/g,
        ) ?? []
    )
  })
  assert.deepEqual(raw, [], `${type}: untranslated texts in the dialog`)
}

describe('the editor in a real browser (npm start, chromium)', function () {
  this.timeout(60000)
  let session: OpenedEditor | null = null
  let editor: Editor
  let examples: NodeInfo[] = []
  let scratch = ''

  /** A flow tab of its own for new nodes, so they never land on an example. */
  const showScratch = async (): Promise<void> => {
    if (!scratch) scratch = await editor.addWorkspace()
    await editor.showWorkspace(scratch)
  }

  const example = (type: string): NodeInfo => {
    const node = examples.find((n) => n.type === type)
    if (!node) throw new Error(`no ${type} node in the example flows (examples/*.json)`)
    return node
  }

  before(async function () {
    requireChromium(this)
    freshArtifacts()
    session = await openEditor()
    ;({ editor } = session)
    const { tolerated } = session.problems
    if (tolerated.length > 0)
      console.log(
        `      (tolerated while the editor loaded: the Node-RED debug-sidebar race, ${tolerated.length} console warnings)`,
      )
    examples = (await editor.flowNodes()).filter((n) => n.type.startsWith('ss-'))
  })

  afterEach(async function () {
    await checkPage(this, session)
  })

  after(async function () {
    await session?.close()
    session = null
  })

  describe('on opening', function () {
    it('opens with the example flows deployed, every node type in them, none marked invalid', async function () {
      const tabs = await editor.workspaces()
      assert.ok(tabs.length >= 1, 'no flow tabs')
      for (const type of PALETTE_TYPES) example(type)
      assert.equal((await editor.configNodes(CONFIG)).length, 1, 'the examples share one state store config node')
      assert.deepEqual(await editor.invalidNodes(), [])
      for (const tab of tabs) {
        await editor.showWorkspace(tab.id)
        // Status arrives over the editor's websocket shortly after the flow is drawn.
        for (const node of examples.filter((n) => n.z === tab.id)) {
          await editor.node(node.id).locator('text.red-ui-flow-node-status-label').filter({ hasText: /\S/ }).waitFor()
        }
        await editor.screenshot(`flow-${tab.label.replace(/[^\w-]+/g, '_')}`)
      }
    })

    it('shows the "state store" palette category with its six nodes, labels and icons', async function () {
      const category = editor.page.locator('#red-ui-palette-container-state_store')
      await category.scrollIntoViewIfNeeded()
      assert.equal((await category.locator('.red-ui-palette-header').textContent())?.trim(), 'state store')
      const nodes = category.locator('.red-ui-palette-node')
      const types = await nodes.evaluateAll((els) => els.map((el) => el.getAttribute('data-palette-type')))
      assert.deepEqual([...types].sort(), [...PALETTE_TYPES].sort())
      for (const type of PALETTE_TYPES) {
        const node = category.locator(`.red-ui-palette-node[data-palette-type="${type}"]`)
        assert.ok(await node.isVisible(), `${type} is visible in the palette`)
        // The editor breaks a label of two words into lines (spaces kept around the break): compare the words.
        assert.equal(
          (await node.locator('.red-ui-palette-label').textContent())?.replace(/\s+/g, ' ').trim(),
          text(catalogue(type), `${type}.paletteLabel`),
        )
        const icon = await node.locator('.red-ui-palette-icon-container').getAttribute('data-palette-icon')
        assert.equal(icon, `icons/node-red-contrib-aio-statestore/${type}.svg`)
        // The icon must load as an image the browser can draw, not just be named.
        const drawn = await editor.page.evaluate(async (src) => {
          const img = new Image()
          img.src = src
          await img.decode()
          return img.naturalWidth > 0 && img.naturalHeight > 0
        }, icon)
        assert.ok(drawn, `${type} icon ${icon} draws`)
      }
      // Hovering a palette node shows the help's first line as its tooltip.
      await category.locator('.red-ui-palette-node[data-palette-type="ss-get"]').hover()
      const tip = editor.page.locator('.red-ui-popover', { hasText: helpSummary('ss-get') })
      await tip.waitFor()
      await editor.screenshot('palette', category)
      await editor.page.mouse.move(700, 450)
      await tip.waitFor({ state: 'detached' })
    })

    it('offers every example flow under Import > Examples', async function () {
      // Flows, and folders of flows (examples/two-runtimes), which the dialog shows as submenus.
      const expected = readdirSync(join(repoRoot, 'examples'), { withFileTypes: true })
        .filter((f) => f.isDirectory() || f.name.endsWith('.json'))
        .map((f) => (f.isDirectory() ? f.name : f.name.slice(0, -'.json'.length)))
        .sort()
      const dialog = await editor.importExamplesOf('node-red-contrib-aio-statestore')
      assert.deepEqual([...dialog.names].sort(), expected)
      const first = expected[0]
      assert.ok(first !== undefined && (await dialog.select(first)), `choosing ${first} enables Import`)
      await editor.screenshot('import-examples', editor.page.locator('.ui-dialog:visible'))
      await dialog.cancel()
    })
  })

  for (const type of PALETTE_TYPES) {
    const spec = SPECS[type]
    describe(type, function () {
      it('a new node from the palette: every field with its default, typed-input menus, hints, and invalid input marked', async function () {
        await showScratch()
        const id = await editor.dropFromPalette(type, 300, 200)
        await editor.edit(id)
        await editor.screenshot(`dialog-${type}-new`, editor.tray())

        await assertDefaultsRendered(editor, type, PREFIX)
        await assertTranslated(editor, type)
        // A new node takes the only state store at once, as the Home Assistant nodes do: ready to deploy.
        const store = editor.field(PREFIX, 'store')
        const [config] = await editor.configNodes(CONFIG)
        assert.equal(await store.inputValue(), config?.id, 'the state store is selected')
        assert.ok(!(await editor.hasError(store)), 'and not marked')
        for (const [prop, want] of Object.entries(spec.shows)) {
          if (typeof want === 'object')
            assert.deepEqual(await editor.typedValue(PREFIX, prop), want, `${prop} shows ${JSON.stringify(want)}`)
          else if (typeof want === 'boolean')
            assert.equal(await editor.field(PREFIX, prop).isChecked(), want, `${prop} checked`)
          else
            assert.equal(await editor.field(PREFIX, prop).inputValue(), want, `${prop} shows ${JSON.stringify(want)}`)
        }
        await spec.reveal?.(editor)
        for (const [prop, menu] of Object.entries(spec.typed)) {
          assert.deepEqual(await editor.typedOptions(PREFIX, prop), menu, `${prop} typed-input menu`)
        }
        for (const [cat, path] of spec.hints) {
          const hint = editor.tray().locator('.form-tips', { hasText: text(cat, path) })
          assert.ok(await hint.isVisible(), `hint ${path} is shown`)
        }

        for (const bad of spec.invalid) {
          await bad.apply(editor)
          const marked = bad.typed ? editor.typedContainer(PREFIX, bad.prop) : editor.field(PREFIX, bad.prop)
          assert.ok(await editor.hasError(marked), `${bad.what} marks ${bad.prop} invalid`)
        }
        await editor.screenshot(`dialog-${type}-invalid`, editor.tray())
        await editor.deleteInDialog()
        assert.equal(await editor.node(id).count(), 0)
      })

      it('the example node: its dialog opens, an edit relabels it on the canvas after Done', async function () {
        const node = example(type)
        await editor.edit(node.id)
        await editor.screenshot(`dialog-${type}-example`, editor.tray())
        await assertTranslated(editor, type)
        await editor.setText(PREFIX, 'name', '')
        await spec.edit(editor)
        await editor.done()
        // The canvas redraws on a later frame: wait for the label, then assert, so a wrong label
        // fails with both texts rather than a timeout.
        await editor.page
          .waitForFunction(
            ({ id, want }) =>
              document.querySelector(`[id="${id}"] g.red-ui-flow-node-label`)?.textContent?.trim() === want,
            {
              id: node.id,
              want: spec.label,
            },
          )
          .catch(() => undefined)
        assert.equal(await editor.label(node.id), spec.label)
        assert.equal(
          await editor.node(node.id).locator('g.red-ui-flow-port-output').count(),
          spec.ports,
          'output ports',
        )
        assert.ok(await editor.isChanged(node.id), 'the node is marked as changed until deployed')
        assert.ok(await editor.isValid(node.id), 'the edited node is valid')
      })

      it('its help opens in the help sidebar', async function () {
        await editor.edit(example(type).id)
        const help = await editor.helpFromDialog()
        assert.equal(help.title, text(catalogue(type), `${type}.paletteLabel`))
        assert.ok(
          help.text.startsWith(helpSummary(type)),
          `help begins with "${helpSummary(type)}", got "${help.text.slice(0, 80)}"`,
        )
        for (const section of ['Inputs', 'Outputs', 'Details'])
          assert.ok(help.headings.includes(section), `help has a ${section} section`)
        await editor.screenshot(`help-${type}`, editor.page.locator('#red-ui-sidebar'))
        await editor.cancel()
      })
    })
  }

  describe(CONFIG, function () {
    it('a new config node: connection, security and advanced tabs, every field with its default, invalid input marked', async function () {
      await showScratch()
      const id = await editor.dropFromPalette('ss-get', 300, 200)
      await editor.edit(id)
      await editor.openConfig('store', 'add')
      const tray = editor.tray()
      const tabs = tray.locator('#node-config-ss-config-tabs li.red-ui-tab')
      assert.deepEqual(
        (await tabs.allTextContents()).map((t) => t.trim()),
        ['connection', 'security', 'advanced'].map((k) => text(common, `ss-config.tabs.${k}`)),
      )
      await assertDefaultsRendered(editor, CONFIG, CONFIG_PREFIX)
      await assertTranslated(editor, CONFIG)
      // Which fields each tab holds: the grouping users navigate by.
      const groups: Record<string, string[]> = {
        connection: ['embedded', 'broker', 'clientId'],
        security: ['username', 'password', 'satTokenFile', 'usetls'],
        advanced: [
          'keepalive',
          'cleanStart',
          'sessionExpiry',
          'requestTimeout',
          'connectionWait',
          'maxInFlight',
          'queueMemory',
          'protocol',
        ],
      }
      for (const [i, [tab, props]] of Object.entries(groups).entries()) {
        await tabs.nth(i).click()
        for (const prop of props)
          assert.ok(await editor.field(CONFIG_PREFIX, prop).isVisible(), `${prop} is on the ${tab} tab`)
        await editor.screenshot(`dialog-${CONFIG}-new-${tab}`, tray)
      }
      await tabs.nth(0).click()
      // Blank, as the docs say: the runtime's broker ($AIO_STATESTORE_URL, else 127.0.0.1:1883), which the placeholder shows.
      assert.equal(await editor.field(CONFIG_PREFIX, 'broker').inputValue(), '')
      await tray.locator('#node-config-input-broker[placeholder^="mqtt://"]').waitFor()
      assert.equal(await editor.hasError(editor.field(CONFIG_PREFIX, 'broker')), false, 'a blank broker is valid')
      assert.ok(
        await tray.locator('.form-tips', { hasText: text(common, 'ss-config.tip.env') }).isVisible(),
        'the environment variable hint is shown',
      )

      const invalid: Array<[string, string, string]> = [
        ['connection', 'broker', '127.0.0.1:1883'],
        ['advanced', 'keepalive', '-1'],
        ['advanced', 'requestTimeout', 'soon'],
        ['advanced', 'maxInFlight', '-10'],
      ]
      for (const [tab, prop, value] of invalid) {
        await tabs.nth(Object.keys(groups).indexOf(tab)).click()
        await editor.setText(CONFIG_PREFIX, prop, value)
        assert.ok(await editor.hasError(editor.field(CONFIG_PREFIX, prop)), `${prop} = ${value} is marked invalid`)
      }
      // The embedded emulator needs no broker URL, so an unusable one stops being an error.
      await tabs.nth(0).click()
      await editor.field(CONFIG_PREFIX, 'embedded').check()
      assert.ok(
        !(await editor.hasError(editor.field(CONFIG_PREFIX, 'broker'))),
        'broker is not required with the embedded emulator',
      )
      await editor.screenshot(`dialog-${CONFIG}-invalid`, tray)

      const help = await editor.helpFromDialog()
      assert.equal(help.title, text(common, 'ss-config.paletteLabel'))
      assert.ok(help.text.startsWith(helpSummary(CONFIG)), `config help begins with "${helpSummary(CONFIG)}"`)
      await editor.screenshot(`help-${CONFIG}`, editor.page.locator('#red-ui-sidebar'))

      await editor.configCancel()
      await editor.deleteInDialog()
      assert.equal((await editor.configNodes(CONFIG)).length, 1, 'cancelling adds no config node')
    })

    it('the example config node: its dialog opens from a node, a new name shows after Done', async function () {
      const node = example('ss-get')
      await editor.edit(node.id)
      await editor.openConfig('store', 'edit')
      await editor.screenshot(`dialog-${CONFIG}-example`, editor.tray())
      await assertTranslated(editor, CONFIG)
      await editor.setText(CONFIG_PREFIX, 'name', 'browser store')
      await editor.configDone()
      const select = editor.field(PREFIX, 'store')
      assert.equal((await select.locator('option:checked').textContent())?.trim(), 'browser store')
      await editor.done()
      const [config] = await editor.configNodes(CONFIG)
      assert.equal(config?.name, 'browser store')
    })
  })

  describe('deploying', function () {
    it('deploys the edits, and every state store node shows its status under it', async function () {
      await editor.deploy()
      for (const node of examples) {
        await editor.showWorkspace(node.z)
        assert.ok(!(await editor.isChanged(node.id)), `${node.type} ${node.id} is deployed`)
      }
      const tabs = await editor.workspaces()
      for (const tab of tabs) {
        const nodes = examples.filter((n) => n.z === tab.id)
        if (nodes.length === 0) continue
        await editor.showWorkspace(tab.id)
        for (const node of nodes) {
          const label = editor.node(node.id).locator('text.red-ui-flow-node-status-label').filter({ hasText: /\S/ })
          await label.waitFor()
          const status = await editor.status(node.id)
          assert.notEqual(status.fill, 'red', `${node.type} ${node.id} status: ${status.text}`)
        }
        await editor.screenshot(`deployed-${tab.label.replace(/[^\w-]+/g, '_')}`)
      }
    })

    it('left nothing in the Node-RED log at error level', function () {
      assert.deepEqual(session!.red.errors(), [])
    })
  })
})
