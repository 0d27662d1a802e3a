// `npm run screenshot`: the README's picture, docs/images/editor.png. The active/standby example,
// where both sites compete for one lease and write with fencing tokens, after site A steps down and
// site B takes over, with the palette showing only this package's category. Uses what the editor
// suite uses: `npm start` on free ports and Debian's chromium.
import { join } from 'node:path'
import { Editor } from './editor'
import { Browser, LOAD_RACE, PageProblems, StartedEditor } from './support'
import { repoRoot } from '../smoke/node-red'

/** `npm run screenshot -- other.png` writes elsewhere. */
const OUT = process.argv[2] ?? join(repoRoot, 'docs', 'images', 'editor.png')

async function main(): Promise<void> {
  const red = await StartedEditor.start(45000)
  let browser: Browser | null = null
  try {
    browser = await Browser.launch()
    const page = browser.page
    const editor = new Editor(page, red.url)
    await new PageProblems(page).tolerating(LOAD_RACE, () => editor.open())
    await page.setViewportSize({ width: 1600, height: 900 })
    await editor.onlyPaletteCategory('state store')
    const tabs = await editor.workspaces()
    const tab = tabs.find((t) => /active.?standby/i.test(t.label)) ?? tabs[0]
    if (!tab) throw new Error('the editor shows no flow tab')
    await editor.showWorkspace(tab.id)
    await page.locator('#red-ui-sidebar-debug-clear').click()
    // The Information tab's rotating tips would stand over half the sidebar: closed as a user closes them.
    const tipsClose = page.locator('.red-ui-help-tips-buttons a').last()
    if (await tipsClose.isVisible()) await tipsClose.click()
    const onTab = (await editor.flowNodes()).filter((n) => n.z === tab.id)
    // npm start's examples wait for their buttons: A takes the lease and B finds it held first.
    for (const name of [/^A tries$/, /^B tries$/, /steps down/i, /tries again/i]) {
      const inject = onTab.find((n) => n.type === 'inject' && name.test(n.name))
      if (!inject) continue
      const before = await page.locator('.red-ui-debug-msg').count()
      await editor.pressButton(inject.id)
      await page.waitForFunction((n) => document.querySelectorAll('.red-ui-debug-msg').length > n, before)
    }
    await editor.dismissNotifications()
    await page.screenshot({ path: OUT, animations: 'disabled' })
    console.log(`wrote ${OUT}`)
  } finally {
    await browser?.close()
    await red.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
