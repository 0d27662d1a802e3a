/**
 * How long each spec file takes, hooks included, for the lanes' runner (scripts/test-lanes.mjs),
 * which starts the slowest files first so that no long one is left to run alone at the end. Loaded
 * with `--require` by the runner; with TEST_SPEC_TIMES set, each file's wall time is appended to
 * that file as a JSON line. In mocha's parallel mode the root hooks run once per spec file.
 */
import { appendFileSync } from 'node:fs'
import { relative } from 'node:path'

let started = 0

export const mochaHooks = {
  beforeAll(this: Mocha.Context): void {
    started = Date.now()
  },
  afterAll(this: Mocha.Context): void {
    const out = process.env.TEST_SPEC_TIMES
    const file = this.test?.parent?.suites.find((s) => s.file)?.file
    if (!out || !file) return
    appendFileSync(out, `${JSON.stringify({ file: relative(process.cwd(), file), ms: Date.now() - started })}\n`)
  },
}
