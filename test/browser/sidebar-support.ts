// What the sidebar suites share: the sidebar's catalogue texts, opening its tab, screenshots of it,
// confirming its dialogs.
import { strict as assert } from 'node:assert'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { catalogue as readCatalogue } from './catalogue'
import { artifactsDir } from './support'

const catalogue = readCatalogue('ss-sidebar') as { 'ss-sidebar': Record<string, unknown> }

/** The English text of an `ss-sidebar.*` catalogue key, with its __substitutions__ filled in. */
export function text(path: string, subs: Record<string, string | number> = {}): string {
  const value = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], catalogue['ss-sidebar'])
  if (typeof value !== 'string') throw new Error(`no catalogue text ${path}`)
  return value.replace(/__(\w+)__/g, (_, k: string) => String(subs[k] ?? ''))
}

/**
 * Shows the state store tab. Node-RED 5 puts the Debug tab below it by default; `layout: 'tall'`
 * hides Debug so the tab has the sidebar's whole height, `layout: 'default'` leaves it as a new
 * user finds it.
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
        await page.evaluate(() => (window as unknown as { RED: { sidebar: { show(id: string): void } } }).RED.sidebar.show('aio-statestore'))
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

/**
 * The sidebar as the user sees it, scrolled so `section` is at the top. An element screenshot
 * would cut the scrolled panel apart, so the page is shot within the panel's box.
 */
export async function shot(page: Page, name: string, section?: string): Promise<void> {
  const panel = page.locator('.ss-sidebar')
  if (section) await page.locator(section).first().evaluate((e) => e.scrollIntoView({ block: 'start' }))
  else await panel.evaluate((e) => (e.scrollTop = 0))
  const box = await panel.boundingBox()
  assert.ok(box, 'the sidebar is on screen')
  await page.screenshot({ path: join(artifactsDir(), `${name}.png`), clip: box, animations: 'disabled' })
}

/** The whole sidebar column as it is (every tab shown in it and the tab buttons), without scrolling anything. */
export async function columnShot(page: Page, name: string): Promise<void> {
  const box = await page.locator('#red-ui-sidebar').boundingBox()
  assert.ok(box, 'the sidebar is on screen')
  const size = page.viewportSize()
  assert.ok(size)
  await page.screenshot({ path: join(artifactsDir(), `${name}.png`), clip: { x: box.x, y: 0, width: size.width - box.x, height: size.height }, animations: 'disabled' })
}

/** Confirms the dialog a set or delete asks for (the one whose button says so). */
export async function confirm(page: Page, action: 'set' | 'delete'): Promise<void> {
  await page.locator('.red-ui-notification button.ss-sidebar-confirm', { hasText: text(`inspector.${action}`) }).last().click()
}
