// What every editor suite does around its tests: `npm start` on free ports, Debian's chromium on its
// editor, the page's problems watched from the first load. Without chromium the suite skips with a
// message, except in CI, where that is a failure.
import { strict as assert } from 'node:assert'
import { Editor } from './editor'
import { Browser, CHROMIUM, chromiumInstalled, LOAD_RACE, PageProblems, StartedEditor } from './support'

export interface EditorSession {
  red: StartedEditor
  browser: Browser
  problems: PageProblems
  editor: Editor
}

/** In a `before`: skips the suite (or fails it, in CI) when chromium is missing. */
export function requireChromium(ctx: Mocha.Context): void {
  if (chromiumInstalled()) return
  if (process.env.CI) throw new Error(`CI must provide chromium at ${CHROMIUM} (.ci/run installs Debian's chromium)`)
  console.warn(
    `      (skipped: no chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH, to run these tests)`,
  )
  ctx.skip()
}

/** Starts `npm start` and opens its editor in chromium; `close()` stops both. */
export type OpenedEditor = EditorSession & { close(): Promise<void> }

export async function openEditor(
  startTimeoutMs = 45000,
  options: { editorLanguage?: string; startArgs?: string[] } = {},
): Promise<OpenedEditor> {
  const { startArgs = [], ...browserOptions } = options
  const red = await StartedEditor.start(startTimeoutMs, startArgs)
  let browser: Browser | null = null
  try {
    browser = await Browser.launch(browserOptions)
    const problems = new PageProblems(browser.page)
    const editor = new Editor(browser.page, red.url)
    await problems.tolerating(LOAD_RACE, () => editor.open())
    const opened = browser
    return {
      red,
      browser: opened,
      problems,
      editor,
      async close() {
        await opened.close()
        await red.stop()
      },
    }
  } catch (err) {
    await browser?.close()
    await red.stop()
    throw err
  }
}

/**
 * In an `afterEach`: closes the trays a failed test left open (the next test starts from the
 * canvas) and fails the test when the page logged an error or a request failed meanwhile.
 */
export async function checkPage(ctx: Mocha.Context, session: EditorSession | null): Promise<void> {
  if (!session) return
  if (ctx.currentTest?.state === 'failed') await session.editor.closeAllTrays()
  assert.deepEqual(session.problems.take(), [], 'the page logged errors or had failed requests')
}
