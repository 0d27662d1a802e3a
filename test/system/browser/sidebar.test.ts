// The "state store" sidebar in the editor, as users meet it: `npm start` (the example flows
// deployed), Debian's chromium. It must show the connection, a watch changing live, the lock of the
// active/standby example, the key inspector, the key browser over 100,000 keys, values as text
// (never as HTML), and, in a runtime with adminAuth, a read-only user not offered set and delete.
// Screenshots go to artifacts/browser/ (docs/images has the ones the README shows).
import { strict as assert } from 'node:assert'
import { StateStoreClient } from '../../../src/client'
import { parseKeyRecords } from '../../../src/formats/key-records'
import { AuthRuntime, RUNTIMES, USERS } from '../sidebar/runtime'
import { Editor, openSidebar } from './editor'
import { openEditor, requireChromium, type OpenedEditor } from './session'
import { confirm, shot, text } from './sidebar-support'
import { Browser, PageProblems } from './support'
import { scaled } from '../../support/deadline'

const WATCHED = 'examples/thermostat/setpoint'
const LOCK = 'examples/pump-owner'
const BULK = 100_000

/** 100,000 keys over the wire, pipelined in batches the client admits at once. */
async function fill(client: StateStoreClient): Promise<void> {
  for (let start = 0; start < BULK; start += 4000) {
    await Promise.all(
      Array.from({ length: 4000 }, (_, i) => client.set(`bulk/${String(start + i).padStart(6, '0')}`, `v${start + i}`)),
    )
  }
}

describe('editor: the state store sidebar', function () {
  this.timeout(180000)
  let session: OpenedEditor | null = null
  let editor: Editor
  let problems: PageProblems
  let outside: StateStoreClient
  let bulk: StateStoreClient
  /** The keys for the browser load while the other tests run. */
  let filled: Promise<void> = Promise.resolve()

  before(async function () {
    requireChromium(this)
    // In memory: the 100,000 keys below then need no journal (with one, their test took 32 s instead of 20).
    session = await openEditor(60000, { startArgs: ['--memory'] })
    assert.match(session.red.output, /store: in memory only \(--memory\)/)
    ;({ problems, editor } = session)
    const brokerUrl = /broker ready at (mqtt:\/\/\S+)/.exec(session.red.output)?.[1]
    assert.ok(brokerUrl, 'npm start names its broker')
    outside = new StateStoreClient({ brokerUrl, clientId: `sidebar-outside-${process.pid}` })
    await outside.ready({ timeoutMs: scaled(10000) })
    // 4,000 sets at a time: on a busy machine the last of them wait longer than the default 10 s.
    bulk = new StateStoreClient({
      brokerUrl,
      clientId: `sidebar-bulk-${process.pid}`,
      maxInFlight: 2000,
      maxQueued: 2000,
      requestTimeoutMs: scaled(10_000),
    })
    await openSidebar(editor.page)
    // Started once the editor is up, so the load does not slow the page's first load.
    filled = fill(bulk)
    filled.catch(() => undefined)
  })

  after(async function () {
    await filled.catch(() => undefined)
    await bulk?.close()
    await outside?.close()
    await session?.close()
  })

  afterEach(function () {
    assert.deepEqual(problems?.take() ?? [], [], 'the page reported no problem')
  })

  it('shows the tab with its help, and the store connected', async function () {
    const page = editor.page
    assert.equal((await page.locator('.ss-sidebar-help').textContent())?.trim(), text('help'))
    const store = page.locator('.ss-sidebar-store').first()
    await store.locator('.ss-sidebar-status .ss-sidebar-value', { hasText: text('state.connected') }).waitFor()
    await store.locator('.ss-sidebar-dot-ok').waitFor()
    assert.ok(
      ((await store.locator('.ss-sidebar-connection').textContent()) ?? '').includes('mqtt://127.0.0.1:'),
      'the broker is shown',
    )
  })

  it('updates a watch live after a SET from outside the editor', async function () {
    const page = editor.page
    const row = page.locator(`.ss-sidebar-watch[data-key="${WATCHED}"]`)
    await row.waitFor()
    const value = `{"celsius": ${20 + Math.round(Math.random() * 1000) / 100}}`
    await outside.set(WATCHED, value)
    await row
      .locator('.ss-sidebar-pre', { hasText: JSON.stringify(JSON.parse(value), null, 2).split('\n')[1]!.trim() })
      .waitFor()
    await shot(page, 'sidebar-watch', '.ss-sidebar-watches')
  })

  it('shows the lock of the active/standby example with holder and fencing token', async function () {
    const page = editor.page
    await editor.pressInject('A tries')
    const held = page.locator(`.ss-sidebar-lock.ss-sidebar-held[data-lock="${LOCK}"]`).first()
    await held.waitFor({ timeout: scaled(20000) })
    assert.match(
      (await held.locator('.ss-sidebar-lock-holder .ss-sidebar-value').textContent()) ?? '',
      /held by this runtime/,
    )
    // Every renewal is a new version (and token), so the two are compared until they agree.
    let shown = ''
    let stored = ''
    for (let attempt = 0; attempt < 40; attempt++) {
      shown = ((await held.locator('.ss-sidebar-lock-token .ss-sidebar-value').textContent()) ?? '').trim()
      stored = (await outside.get(LOCK)).version?.toString() ?? ''
      if (shown === stored) break
      await new Promise((r) => setTimeout(r, 250))
    }
    assert.ok(stored, 'the lease key exists')
    assert.equal(shown, stored, 'the token shown is the version of the lease key')
  })

  it('the key inspector sets, reads and deletes a key, each after a confirmation', async function () {
    const page = editor.page
    const inspector = page.locator('.ss-sidebar-inspector')
    await inspector.locator('.ss-sidebar-inspector-key').fill('sidebar/inspected')
    await inspector.locator('.ss-sidebar-inspector-value').fill('hello from the sidebar')
    await inspector.locator('.ss-sidebar-set').click()
    await confirm(page, 'set')
    await inspector.locator('.ss-sidebar-ok', { hasText: 'Key set' }).waitFor()
    assert.equal((await outside.get('sidebar/inspected')).value?.toString(), 'hello from the sidebar')

    await outside.set('sidebar/inspected', 'changed outside')
    await inspector.locator('.ss-sidebar-get').click()
    await inspector.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'changed outside' }).waitFor()
    assert.equal(
      (await inspector.locator('.ss-sidebar-inspected-version .ss-sidebar-value').textContent())?.trim(),
      (await outside.get('sidebar/inspected')).version!.toString(),
    )
    // npm start -- --memory keeps no key: not persisted, and the inspector says it is the store's setting, not the key's.
    assert.equal(
      (await inspector.locator('.ss-sidebar-inspected-persisted .ss-sidebar-value').textContent())?.trim(),
      text('inspector.notPersistedNoFile'),
    )
    await shot(page, 'sidebar-inspector', '.ss-sidebar-inspector')

    await inspector.locator('.ss-sidebar-delete').click()
    await confirm(page, 'delete')
    await inspector.locator('.ss-sidebar-ok', { hasText: text('inspector.done.deleted') }).waitFor()
    assert.equal((await outside.get('sidebar/inspected')).value, null)
  })

  it('shows an HTML-looking key and value as text', async function () {
    const page = editor.page
    const key = '<b>bold</b>'
    const value = '<img src=x onerror="window.__ssXss=1"><script>window.__ssXss=1</script>'
    await outside.set(key, value)
    const inspector = page.locator('.ss-sidebar-inspector')
    await inspector.locator('.ss-sidebar-inspector-key').fill(key)
    await inspector.locator('.ss-sidebar-get').click()
    const pre = inspector.locator('.ss-sidebar-inspected-value .ss-sidebar-pre')
    await pre.waitFor()
    assert.equal(await pre.textContent(), value)
    assert.equal(
      await page.locator('.ss-sidebar img, .ss-sidebar script, .ss-sidebar b').count(),
      0,
      'no element made from a value',
    )
    await page.locator('.ss-sidebar-browser-pattern').fill('<b>*')
    await page.locator('.ss-sidebar-list').click()
    await page.locator('.ss-sidebar-browsed .ss-sidebar-key', { hasText: key }).waitFor()
    assert.equal(await page.locator('.ss-sidebar b').count(), 0, 'the key is text too')
    assert.equal(
      await page.evaluate(() => (window as unknown as { __ssXss?: number }).__ssXss),
      undefined,
      'nothing ran',
    )
  })

  it('the key browser filters 100,000 keys, page by page', async function () {
    const page = editor.page
    await filled
    await page.locator('.ss-sidebar-browser-pattern').fill('bulk/0042*')
    await page.locator('.ss-sidebar-list').click()
    // Listed with SCAN (the embedded emulator answers it), which pages without counting.
    const count = page.locator('.ss-sidebar-count', { hasText: /^50 keys on this page/ })
    await count.waitFor()
    assert.equal(await count.textContent(), '50 keys on this page (listed with SCAN)')
    const rows = page.locator('.ss-sidebar-browsed .ss-sidebar-key')
    assert.equal(await rows.count(), 50)
    assert.equal(await rows.first().textContent(), 'bulk/004200')
    await shot(page, 'sidebar-browser', '.ss-sidebar-browser')
    await page.locator('.ss-sidebar-next').click()
    await rows.first().filter({ hasText: 'bulk/004250' }).waitFor()
    assert.equal(await rows.last().textContent(), 'bulk/004299')
    assert.equal(await page.locator('.ss-sidebar-next').count(), 0, 'the last page has no next')
    // A key from the list opens in the inspector.
    await rows.first().locator('a').click()
    await page.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'v4250' }).waitFor()
  })

  it('the key browser exports the keys of its pattern as a file that import and --seed read', async function () {
    const page = editor.page
    await filled
    await page.locator('.ss-sidebar-browser-pattern').fill('bulk/00420*')
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('.ss-sidebar-export').click()])
    assert.equal(download.suggestedFilename(), 'statestore-export.ndjson')
    const chunks: Buffer[] = []
    for await (const chunk of await download.createReadStream()) chunks.push(chunk as Buffer)
    const records = parseKeyRecords(Buffer.concat(chunks).toString('utf8'))
    assert.deepEqual(
      records.map((r) => [r.key.toString(), r.value.toString()]).sort(),
      Array.from({ length: 10 }, (_, i) => [`bulk/00420${i}`, `v420${i}`]),
    )
    await page.locator('.ss-sidebar-browser .ss-sidebar-ok', { hasText: 'Saved 10 keys as a file.' }).waitFor()
  })

  it('the key browser imports a file beside Export, and names the line of a bad one', async function () {
    const page = editor.page
    const upload = (name: string, lines: string) =>
      Promise.all([page.waitForEvent('filechooser'), page.locator('.ss-sidebar-import').click()]).then(([chooser]) =>
        chooser.setFiles({ name, mimeType: 'application/x-ndjson', buffer: Buffer.from(lines) }),
      )
    await upload('bad.ndjson', '{"key":"sidebar/imported/a","value":"1"}\n{"key":"sidebar/imported/b"}\n')
    await page
      .locator('.ss-sidebar-browser .ss-sidebar-error', { hasText: /^Line 2 of the file is not a key record/ })
      .waitFor()
    assert.equal((await outside.get('sidebar/imported/a')).value, null, 'nothing of a bad file is written')
    // The refusal is the runtime's answer the page shows, not a problem of the page.
    problems.take()
    await upload('good.ndjson', '{"key":"sidebar/imported/a","value":"1"}\n')
    await page.locator('.ss-sidebar-browser .ss-sidebar-ok', { hasText: 'Imported 1 key.' }).waitFor()
    assert.equal((await outside.get('sidebar/imported/a')).value?.toString(), '1')
  })

  it('takes the screenshot the README shows', async function () {
    await shot(editor.page, 'sidebar')
    await editor.page.locator('.ss-sidebar').evaluate((e) => (e.scrollTop = 0))
    await editor.screenshot('sidebar-editor')
  })

  it('left nothing in the Node-RED log at error level, and no value in the log', function () {
    assert.deepEqual(session!.red.errors(), [])
    assert.ok(!session!.red.output.includes('hello from the sidebar'), 'a value set from the sidebar is not logged')
  })
})

for (const [version, redJs] of Object.entries(RUNTIMES)) {
  describe(`editor: the state store sidebar for a read-only user, ${version}`, function () {
    this.timeout(120000)
    let rt: AuthRuntime | null = null
    let browser: Browser | null = null

    before(async function () {
      requireChromium(this)
      rt = await AuthRuntime.start(redJs, [
        { id: 'tab1', type: 'tab', label: 'sidebar' },
        { id: 'cfg1', type: 'ss-config', name: 'local', embedded: true, clientId: 'sidebar-reader' },
        { id: 'watch1', type: 'ss-watch', z: 'tab1', store: 'cfg1', keys: 'guarded', decode: 'auto', wires: [[]] },
      ])
      const admin = await rt.token('admin')
      await rt.request('PUT', '/aio-statestore/stores/cfg1/key', admin, { key: 'guarded', value: 'original' })
      browser = await Browser.launch()
    })

    after(async function () {
      await browser?.close()
      await rt?.stop()
    })

    it('sees the key, is not offered set and delete, and is refused them by the runtime (HTTP 401/403)', async function () {
      const page = browser!.page
      const problems = new PageProblems(page)
      await page.goto(rt!.url)
      await page.locator('#node-dialog-login-username').fill('reader')
      await page.locator('#node-dialog-login-password').fill(USERS.reader)
      await page.locator('#node-dialog-login-submit').click()
      await page.locator('#red-ui-main-container').waitFor({ state: 'visible', timeout: scaled(30000) })
      await openSidebar(page).catch((err: Error) => {
        throw new Error(`${err.message}\npage problems: ${problems.take().join('\n')}`)
      })
      const inspector = page.locator('.ss-sidebar-inspector')
      await inspector.locator('.ss-sidebar-inspector-key').fill('guarded')
      await inspector.locator('.ss-sidebar-get').click()
      await inspector.locator('.ss-sidebar-inspected-value .ss-sidebar-pre', { hasText: 'original' }).waitFor()

      // No write controls, and a note that says why.
      await inspector.locator('.ss-sidebar-read-only', { hasText: text('inspector.readOnly') }).waitFor()
      assert.equal(
        await inspector.locator('.ss-sidebar-set, .ss-sidebar-delete, .ss-sidebar-inspector-value').count(),
        0,
        'set, delete and the value to set are not shown',
      )

      // The runtime refuses them all the same, to a request made without the sidebar.
      const reader = await rt!.token('reader')
      const set = await rt!.request('PUT', '/aio-statestore/stores/cfg1/key', reader, {
        key: 'guarded',
        value: 'overwritten',
      })
      assert.ok([401, 403].includes(set.status), `set answered ${set.status}`)
      const del = await rt!.request('DELETE', '/aio-statestore/stores/cfg1/key?key=guarded', reader)
      assert.ok([401, 403].includes(del.status), `delete answered ${del.status}`)
      await shot(page, `sidebar-read-only-${version.replace(/\W+/g, '')}`, '.ss-sidebar-inspector')

      // The login prompt (the editor's first /settings) is the only HTTP error; nothing else went wrong in the page.
      const expected = [
        /^HTTP 401: GET .*\/settings\?/,
        /^console error: Failed to load resource: .* 401 .*\/settings\?/,
      ]
      assert.deepEqual(
        problems.take().filter((p) => !expected.some((re) => re.test(p))),
        [],
      )
      const admin = await rt!.token('admin')
      const kept = (await rt!.request('GET', '/aio-statestore/stores/cfg1/key?key=guarded', admin)).json as {
        value: { preview: string }
      }
      assert.equal(kept.value.preview, 'original', 'the key is unchanged')
    })
  })
}
