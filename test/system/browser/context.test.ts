// The context store in the editor: `npm start` configures the `statestore` context store and deploys
// the context-store-counter example, which counts once on deploy. The Context Data sidebar must list
// the example's keys in that store, for the flow and for global, with their values.
// (The README's picture docs/images/context-sidebar.png is this test's screenshot, copied by hand.)
import { strict as assert } from 'node:assert'
import { openEditor, requireChromium, type OpenedEditor } from './session'
import type { Browser, PageProblems } from './support'
import { Editor } from './editor'
import { scaled } from '../../support/deadline'

const FLOW_A = 'c0a7e57000000001'
// The editor's global, inside the page.
declare const RED: { actions: { invoke(name: string): void } }

describe('the editor: the Context Data sidebar shows the state store context store (npm start, chromium)', function () {
  this.timeout(60000)
  let session: OpenedEditor | null = null
  let browser: Browser | null = null
  let problems: PageProblems
  let editor: Editor

  before(async function () {
    requireChromium(this)
    session = await openEditor()
    ;({ browser, problems, editor } = session)
  })

  after(async function () {
    await session?.close()
    session = null
    browser = null
  })

  it('lists the flow and global keys of the statestore store with their values', async function () {
    const page = browser!.page
    await editor.pressInject('count in A')
    await editor.showWorkspace(FLOW_A)
    await page.evaluate(() => RED.actions.invoke('core:show-context-tab'))
    // (the stack: Node-RED sets the class red-ui-sidebar-context on a jQuery object, not on the element)
    const sidebar = page.locator('.red-ui-sidebar-context-stack')
    try {
      await sidebar.waitFor({ state: 'attached', timeout: scaled(5000) })
    } catch (err) {
      await editor.screenshot('context-sidebar-missing')
      throw err
    }
    // the flow and global sections load when their refresh button is pressed
    // In one go inside the page: a section re-renders as the one before it loads.
    await page.evaluate(() => {
      for (const icon of document.querySelectorAll<HTMLElement>('.red-ui-sidebar-context-stack button i.fa-refresh')) {
        const button = icon.closest('button')
        if (button && button.offsetParent !== null) button.click()
      }
    })
    const row = (name: string) =>
      sidebar
        .locator('tr.red-ui-help-info-row')
        .filter({ has: page.locator('td.red-ui-sidebar-context-property', { hasText: name }) })
    for (const name of ['presses', 'counter']) {
      await row(name).first().waitFor()
      assert.match(await row(name).first().innerText(), /statestore/, `${name} is listed under the statestore store`)
      assert.match(await row(name).first().innerText(), /\b1\b/, `${name} shows its value`)
    }
    await editor.screenshot('context-sidebar')
    assert.deepEqual(problems.take(), [], 'the page logged errors or had failed requests')
  })
})
