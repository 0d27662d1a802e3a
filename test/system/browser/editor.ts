/// <reference lib="dom" />
// The Node-RED editor as a user drives it: tabs, the palette, double-click to edit, the tray's
// fields and buttons, the help sidebar, Deploy. Reads go through the DOM the user sees; the
// editor's own model (RED.nodes) is read only to find which node sits where.
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { artifactsDir } from './support'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'

// The parts of the editor's global API the page functions below read (they run in the page).
declare const RED: {
  nodes: {
    eachNode(cb: (n: EditorNode) => void): void
    eachConfig(cb: (n: EditorNode) => void): void
    eachWorkspace(cb: (w: { id: string; label: string }) => void): void
    node(id: string): EditorNode | null
    getType(type: string): {
      defaults: Record<string, { value: unknown; type?: string }>
      credentials?: Record<string, unknown>
    }
  }
  workspaces: { active(): string }
  tray: { close(done?: () => void): void }
  view: { selection(): { nodes?: EditorNode[] } }
}
interface EditorNode {
  id: string
  type: string
  z?: string
  name?: string
  valid?: boolean
  users?: unknown[]
}

export interface NodeInfo {
  id: string
  type: string
  z: string
  name: string
}

export interface TypedValue {
  type: string
  value: string
}

/** A field of the open dialog next to the default its node definition declares. */
export interface FieldDefault {
  prop: string
  kind: string
  expected: string
  /** What the field shows (checkbox: "true"/"false"); null when the dialog has no such field. */
  shown: string | null
}

export interface NodeStatus {
  text: string
  fill: string
}

/** An attribute selector, since Node-RED ids may start with a digit (not allowed after # in CSS). */
const byId = (id: string): string => `[id="${id}"]`

export class Editor {
  constructor(
    readonly page: Page,
    readonly url: string,
  ) {}

  /** Loads the editor and waits until the palette and the deployed flows are drawn. */
  async open(): Promise<void> {
    await this.page.goto(this.url)
    await this.page
      .locator('#red-ui-palette-container-state_store')
      .waitFor({ state: 'attached', timeout: scaled(30000) })
    await this.page
      .locator('#red-ui-workspace-chart g.red-ui-flow-node-group')
      .first()
      .waitFor({ timeout: scaled(30000) })
    // The editor fades a loading overlay out once the flows are in; clicks before that are lost.
    await this.page.locator('#red-ui-main-container').waitFor({ state: 'visible' })
  }

  async workspaces(): Promise<Array<{ id: string; label: string }>> {
    return this.page.evaluate(() => {
      const list: Array<{ id: string; label: string }> = []
      RED.nodes.eachWorkspace((w) => list.push({ id: w.id, label: w.label }))
      return list
    })
  }

  /** Flow nodes (not config nodes), in flow-file order. */
  async flowNodes(): Promise<NodeInfo[]> {
    return this.page.evaluate(() => {
      const list: Array<{ id: string; type: string; z: string; name: string }> = []
      RED.nodes.eachNode((n) => list.push({ id: n.id, type: n.type, z: n.z ?? '', name: n.name ?? '' }))
      return list
    })
  }

  async configNodes(type: string): Promise<NodeInfo[]> {
    return this.page.evaluate((t) => {
      const list: Array<{ id: string; type: string; z: string; name: string }> = []
      RED.nodes.eachConfig((n) => {
        if (n.type === t) list.push({ id: n.id, type: n.type, z: n.z ?? '', name: n.name ?? '' })
      })
      return list
    }, type)
  }

  /** Ids of nodes the editor considers invalid (drawn with the red warning triangle). */
  async isValid(id: string): Promise<boolean> {
    return this.page.evaluate((nid) => RED.nodes.node(nid)?.valid !== false, id)
  }

  async invalidNodes(): Promise<string[]> {
    return this.page.evaluate(() => {
      const ids: string[] = []
      RED.nodes.eachNode((n) => {
        if (n.valid === false) ids.push(`${n.type} ${n.id}`)
      })
      RED.nodes.eachConfig((n) => {
        if (n.valid === false) ids.push(`${n.type} ${n.id}`)
      })
      return ids
    })
  }

  /** Clicks a flow's tab. */
  async showWorkspace(id: string): Promise<void> {
    if ((await this.page.evaluate(() => RED.workspaces.active())) === id) return
    await this.page
      .locator(`#red-ui-workspace-tabs li${byId(`red-ui-tab-${id.replace('.', '-')}`)} a.red-ui-tab-label`)
      .click()
    await this.page.waitForFunction((z) => RED.workspaces.active() === z, id)
  }

  /** Adds a flow tab with the + button, as a clean place to drop new nodes. */
  async addWorkspace(): Promise<string> {
    const before = new Set((await this.workspaces()).map((w) => w.id))
    await this.page
      .locator(':has(> .red-ui-tabs-scroll-container > #red-ui-workspace-tabs) > .red-ui-tabs-add > a')
      .click()
    await this.page.waitForFunction((n) => {
      let count = 0
      RED.nodes.eachWorkspace(() => count++)
      return count > n
    }, before.size)
    const added = (await this.workspaces()).find((w) => !before.has(w.id))
    if (!added) throw new Error('no new flow tab')
    await this.page.waitForFunction((z) => RED.workspaces.active() === z, added.id)
    return added.id
  }

  node(id: string): Locator {
    return this.page.locator(`#red-ui-workspace-chart g.red-ui-flow-node-group${byId(id)}`)
  }

  async label(id: string): Promise<string> {
    return ((await this.node(id).locator('g.red-ui-flow-node-label').textContent()) ?? '').trim()
  }

  async status(id: string): Promise<NodeStatus> {
    const group = this.node(id).locator('g.red-ui-flow-node-status-group')
    const text = ((await group.locator('text.red-ui-flow-node-status-label').textContent()) ?? '').trim()
    const cls = (await group.locator('rect.red-ui-flow-node-status').getAttribute('class')) ?? ''
    const fill = /red-ui-flow-node-status-(?:dot|ring)-(\w+)/.exec(cls)?.[1] ?? ''
    return { text, fill }
  }

  /** Whether the node carries the "changed, not deployed" marker. */
  async isChanged(id: string): Promise<boolean> {
    return !(await this.node(id).locator('g.red-ui-flow-node-changed').getAttribute('class'))?.includes('hide')
  }

  /** Presses an inject node's button on the canvas. */
  /**
   * Presses the inject button of the node with this name: npm start's examples are quiet (their
   * run-once injects are plain buttons), so a test that needs one running starts it as a user does.
   */
  async pressInject(name: string): Promise<void> {
    const inject = (await this.flowNodes()).find((n) => n.type === 'inject' && n.name === name)
    if (!inject) throw new Error(`no inject node named ${JSON.stringify(name)}`)
    await this.pressButton(inject.id)
  }

  async pressButton(id: string): Promise<void> {
    const z = await this.page.evaluate((nid) => RED.nodes.node(nid)?.z ?? '', id)
    await this.showWorkspace(z)
    await this.node(id).locator('g.red-ui-flow-node-button rect.red-ui-flow-node-button-button').click()
  }

  /** Clicks away the editor's pop-up notifications (a click closes one). */
  async dismissNotifications(): Promise<void> {
    const notes = this.page.locator('.red-ui-notification')
    for (let count = await notes.count(); count > 0; count = await notes.count()) {
      await notes.first().click()
      await this.page.waitForFunction((n) => document.querySelectorAll('.red-ui-notification').length < n, count)
    }
  }

  /** Menu > Import > Examples: the example flow names the editor offers for a package. */
  async importExamplesOf(
    pkg: string,
  ): Promise<{ names: string[]; select: (name: string) => Promise<boolean>; cancel: () => Promise<void> }> {
    const page = this.page
    await page.locator('#red-ui-header-button-sidemenu').click()
    await page.locator('#menu-item-import').click()
    await page
      .locator('#red-ui-clipboard-dialog-import-tabs a[href="#red-ui-clipboard-dialog-import-tab-examples"]')
      .click()
    const tree = page.locator('#red-ui-clipboard-dialog-import-tab-examples')
    const folder = tree.locator('li', {
      has: page.locator(`> div > .red-ui-treeList-label .red-ui-treeList-label-text:text-is("${pkg}")`),
    })
    const files = folder.locator('> div > .red-ui-editableList .red-ui-treeList-label-text')
    // The tree is built again when the library's listing arrives, so a folder opened before that is
    // shown closed: open it until its flows show, clicking only a folder that is closed.
    await until(
      async () => {
        if (await files.first().isVisible()) return true
        const row = folder.locator('> div').first()
        if ((await row.count()) > 0 && !(await row.evaluate((el) => el.classList.contains('expanded')))) {
          await folder.locator('> div > .red-ui-treeList-label').click()
        }
        return false
      },
      `the ${pkg} examples folder open with its flows`,
      30_000,
      250,
    )
    const names = (await files.allTextContents()).map((n) => n.trim())
    return {
      names,
      // Choosing a flow enables the Import button.
      select: async (name) => {
        await files.filter({ hasText: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).click()
        return page.locator('#red-ui-clipboard-dialog-ok').isEnabled()
      },
      cancel: async () => {
        await page.locator('#red-ui-clipboard-dialog-cancel').click()
        await page.locator('#red-ui-clipboard-dialog-cancel').waitFor({ state: 'hidden' })
      },
    }
  }

  /** Opens only the named palette category and closes the others, as a user tidies the palette. */
  async onlyPaletteCategory(label: string): Promise<void> {
    // In one go inside the page: the palette re-renders its categories (after a filter, say) between
    // one locator call and the next, and a header listed a moment ago may be gone.
    await this.page.evaluate((wanted) => {
      for (const header of document.querySelectorAll<HTMLElement>(
        '.red-ui-palette-category > .red-ui-palette-header',
      )) {
        if (header.offsetParent === null) continue
        const open = header.getAttribute('aria-expanded') === 'true'
        if (((header.textContent ?? '').trim() === wanted) !== open) header.click()
      }
    }, label)
  }

  /** Drags a node from the palette onto the canvas; the new node's id. */
  async dropFromPalette(type: string, x: number, y: number): Promise<string> {
    const before = new Set((await this.flowNodes()).map((n) => n.id))
    const source = this.page.locator(`.red-ui-palette-node[data-palette-type="${type}"]`)
    await source.scrollIntoViewIfNeeded()
    const from = await source.boundingBox()
    const chart = await this.page.locator('#red-ui-workspace-chart').boundingBox()
    if (!from || !chart) throw new Error('palette node or canvas not visible')
    const mouse = this.page.mouse
    await mouse.move(from.x + from.width / 2, from.y + from.height / 2)
    await mouse.down()
    // jQuery UI starts a drag only after the pointer has moved a few pixels.
    await mouse.move(from.x + from.width / 2 + 20, from.y + from.height / 2, { steps: 4 })
    await mouse.move(chart.x + x, chart.y + y, { steps: 10 })
    await mouse.up()
    await this.page.waitForFunction((n) => {
      let count = 0
      RED.nodes.eachNode(() => count++)
      return count > n
    }, before.size)
    const added = (await this.flowNodes()).find((n) => !before.has(n.id))
    if (!added) throw new Error(`dropping ${type} added no node`)
    return added.id
  }

  /** After a failed step: closes every open dialog so the next test starts from the canvas. */
  async closeAllTrays(): Promise<void> {
    for (let i = 0; i < 5 && (await this.page.locator('.red-ui-tray').count()) > 0; i++) {
      await this.page.evaluate(() => new Promise<void>((resolve) => RED.tray.close(resolve)))
    }
    await this.page.keyboard.press('Escape')
  }

  /** The topmost edit tray (a config node's dialog stacks over the node's). */
  tray(): Locator {
    return this.page.locator('.red-ui-tray').last()
  }

  /** Double-clicks a node on its flow tab and waits for its edit dialog. */
  async edit(id: string): Promise<void> {
    const z = await this.page.evaluate((nid) => RED.nodes.node(nid)?.z ?? '', id)
    await this.showWorkspace(z)
    await this.node(id).locator('rect.red-ui-flow-node').dblclick()
    await this.waitForTray('#node-dialog-ok')
  }

  private async waitForTray(okButton: string): Promise<void> {
    await this.page.locator(okButton).waitFor({ state: 'visible' })
    // The tray slides in (CSS transition on `right`); screenshots and clicks wait for it to settle.
    await this.page.waitForFunction(() => {
      const trays = document.querySelectorAll<HTMLElement>('.red-ui-tray')
      const top = trays[trays.length - 1]
      return !!top && getComputedStyle(top).right === '0px'
    })
  }

  /** The config node dialog, from the pencil (edit) or + (add) button beside a config select. */
  async openConfig(property: string, button: 'edit' | 'add'): Promise<void> {
    await this.page.locator(`#node-input-btn-${property}-${button}`).click()
    await this.waitForTray('#node-config-dialog-ok')
  }

  async done(): Promise<void> {
    await this.closeWith('#node-dialog-ok', '#node-dialog-ok')
  }

  async cancel(): Promise<void> {
    await this.closeWith('#node-dialog-cancel', '#node-dialog-ok')
  }

  /** The dialog's Delete button: removes the node being edited. */
  async deleteInDialog(): Promise<void> {
    await this.closeWith('#node-dialog-delete', '#node-dialog-ok')
  }

  async configDone(): Promise<void> {
    await this.closeWith('#node-config-dialog-ok', '#node-config-dialog-ok')
  }

  async configCancel(): Promise<void> {
    await this.closeWith('#node-config-dialog-cancel', '#node-config-dialog-ok')
  }

  /** Clicks a tray button and waits until that tray is gone (its OK button leaves the page). */
  private async closeWith(button: string, okButton: string): Promise<void> {
    await this.page.locator(button).click()
    await this.page.locator(okButton).waitFor({ state: 'detached' })
  }

  field(prefix: string, prop: string): Locator {
    return this.tray().locator(`#${prefix}-${prop}`)
  }

  /**
   * Every property the node definition declares with a default (and every credential, default
   * empty), against what the open dialog shows for it. Config-node references are left out: what
   * they show depends on the config nodes present.
   */
  async fieldDefaults(type: string, prefix: string): Promise<FieldDefault[]> {
    return this.page.evaluate(
      ({ t, p }) => {
        const def = RED.nodes.getType(t)
        const props: Array<[string, unknown]> = Object.entries(def.defaults)
          .filter(([, d]) => !d.type)
          .map(([k, d]) => [k, d.value])
        for (const k of Object.keys(def.credentials ?? {})) props.push([k, ''])
        return props.map(([prop, value]) => {
          const el = document.getElementById(`${p}-${prop}`) as
            HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | null
          if (!el) return { prop, kind: 'missing', expected: String(value), shown: null }
          const checkbox = el instanceof HTMLInputElement && el.type === 'checkbox'
          return {
            prop,
            kind: checkbox ? 'checkbox' : el.tagName.toLowerCase(),
            expected: String(value),
            shown: checkbox ? String(el.checked) : el.value,
          }
        })
      },
      { t: type, p: prefix },
    )
  }

  /** The visible widget of a typedInput (the original input is hidden behind it). */
  typedContainer(prefix: string, prop: string): Locator {
    return this.tray().locator(`#${prefix}-${prop} + .red-ui-typedInput-container`)
  }

  async typedValue(prefix: string, prop: string): Promise<TypedValue> {
    const type = await this.tray().locator(`#${prefix}-${prop}Type`).inputValue()
    const value = await this.field(prefix, prop).inputValue()
    return { type, value }
  }

  /** The types offered by a typedInput's menu, as the user sees them when opening it. */
  async typedOptions(prefix: string, prop: string): Promise<string[]> {
    const trigger = this.typedContainer(prefix, prop).locator('button.red-ui-typedInput-type-select')
    await trigger.click()
    const menu = this.page.locator('.red-ui-typedInput-options:visible')
    await menu.waitFor()
    const values = await menu.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('value') ?? ''))
    // A second click on the trigger closes the menu without choosing.
    await trigger.click()
    await menu.waitFor({ state: 'hidden' })
    return values
  }

  /** Picks a type from the typedInput's menu and types the value into its visible input. */
  async setTyped(prefix: string, prop: string, type: string, value: string): Promise<void> {
    const container = this.typedContainer(prefix, prop)
    if ((await this.tray().locator(`#${prefix}-${prop}Type`).inputValue()) !== type) {
      await container.locator('button.red-ui-typedInput-type-select').click()
      const menu = this.page.locator('.red-ui-typedInput-options:visible')
      await menu.locator(`a[value="${type}"]`).click()
      await menu.waitFor({ state: 'hidden' })
    }
    const input = container.locator('.red-ui-typedInput-input-wrap input')
    await input.fill(value)
    await input.press('Tab')
  }

  /** Types into a plain input and leaves it, which is when the editor validates it. */
  async setText(prefix: string, prop: string, value: string): Promise<void> {
    const input = this.field(prefix, prop)
    await input.fill(value)
    await input.press('Tab')
  }

  async hasError(locator: Locator): Promise<boolean> {
    return ((await locator.getAttribute('class')) ?? '').split(/\s+/).includes('input-error')
  }

  /** The help for the node being edited, from the book button at the foot of its dialog. */
  async helpFromDialog(): Promise<{ title: string; text: string; headings: string[] }> {
    await this.tray().locator('.red-ui-tray-footer-left button:has(i.fa-book)').click()
    const sidebar = this.page.locator('#red-ui-sidebar .red-ui-help')
    await sidebar.locator('h1.red-ui-help-title').waitFor()
    const title = ((await sidebar.locator('h1.red-ui-help-title').textContent()) ?? '').trim()
    const text = ((await sidebar.locator('div.red-ui-help').textContent()) ?? '').replace(/\s+/g, ' ').trim()
    const headings = (await sidebar.locator('div.red-ui-help h3').allTextContents()).map((h) => h.trim())
    return { title, text, headings }
  }

  /** Clicks Deploy and waits for the editor to confirm it. */
  async deploy(): Promise<void> {
    await this.page.locator('#red-ui-header-button-deploy').click()
    const note = this.page.locator('.red-ui-notification', { hasText: 'Successfully deployed' })
    await note.waitFor({ timeout: scaled(15000) })
    await this.page.waitForFunction(
      () => document.querySelector('#red-ui-header-button-deploy')?.classList.contains('disabled') === true,
    )
  }

  async screenshot(name: string, target?: Locator): Promise<string> {
    const file = join(artifactsDir(), `${name}.png`)
    if (target) await target.screenshot({ path: file, animations: 'disabled' })
    else await this.page.screenshot({ path: file, animations: 'disabled' })
    return file
  }
}

/**
 * Shows the "state store" sidebar tab (also for a page an Editor does not drive, e.g. after a
 * login). Node-RED 5 puts the Debug tab below it by default; `layout: 'tall'` hides Debug so the tab
 * has the sidebar's whole height, `layout: 'default'` leaves it as a new user finds it.
 */
export async function openSidebar(page: Page, layout: 'tall' | 'default' = 'tall'): Promise<void> {
  // The editor adds plugins after the flows are drawn: wait for the tab's content to exist.
  await page.locator('.ss-sidebar').waitFor({ state: 'attached' })
  const button = page.locator('button[data-tab-id="aio-statestore"]')
  // Node-RED 5 has a button per tab; Node-RED 4 a tab strip whose overflow hides some: its own call then.
  if (await button.count()) await button.click()
  else {
    // Node-RED 4 shows its first tab once it has loaded, which may come after ours was shown.
    let shownFor = 0
    for (let attempt = 0; attempt < 30 && shownFor < 3; attempt++) {
      if (await page.locator('.ss-sidebar').isVisible()) shownFor += 1
      else {
        shownFor = 0
        await page.evaluate(() =>
          (window as unknown as { RED: { sidebar: { show(id: string): void } } }).RED.sidebar.show('aio-statestore'),
        )
      }
      await new Promise((r) => setTimeout(r, 500))
    }
    await page.locator('.ss-sidebar').waitFor({ state: 'visible' })
  }
  await page.locator('.ss-sidebar').waitFor({ state: 'visible' })
  if (layout === 'default') return
  const debug = page.locator('button[data-tab-id="debug"]')
  if (await debug.count()) {
    await debug.click()
    await page.locator('.ss-sidebar').waitFor({ state: 'visible' })
  }
}
