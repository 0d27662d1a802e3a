// What the sidebar suites share: the sidebar's catalogue texts, screenshots of it, confirming its
// dialogs (opening its tab is editor.ts's openSidebar).
import { strict as assert } from 'node:assert'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { catalogue as readCatalogue } from './catalogue'
import { artifactsDir } from './support'

const catalogue = readCatalogue('ss-sidebar') as { 'ss-sidebar': Record<string, unknown> }

/** The English text of an `ss-sidebar.*` catalogue key, with its __substitutions__ filled in. */
export function text(path: string, subs: Record<string, string | number> = {}): string {
  const value = path
    .split('.')
    .reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], catalogue['ss-sidebar'])
  if (typeof value !== 'string') throw new Error(`no catalogue text ${path}`)
  return value.replace(/__(\w+)__/g, (_, k: string) => String(subs[k] ?? ''))
}

/**
 * The sidebar as the user sees it, scrolled so `section` is at the top. An element screenshot
 * would cut the scrolled panel apart, so the page is shot within the panel's box.
 */
export async function shot(page: Page, name: string, section?: string): Promise<void> {
  const panel = page.locator('.ss-sidebar')
  if (section)
    await page
      .locator(section)
      .first()
      .evaluate((e) => e.scrollIntoView({ block: 'start' }))
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
  await page.screenshot({
    path: join(artifactsDir(), `${name}.png`),
    clip: { x: box.x, y: 0, width: size.width - box.x, height: size.height },
    animations: 'disabled',
  })
}

/** Confirms the dialog a set or delete asks for (the one whose button says so). */
export async function confirm(page: Page, action: 'set' | 'delete'): Promise<void> {
  await page
    .locator('.red-ui-notification button.ss-sidebar-confirm', { hasText: text(`inspector.${action}`) })
    .last()
    .click()
}
