import assert from 'node:assert/strict'
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { prepareDevLayout } from '../../../src/emulator/dev-layout'

/**
 * `--dev` refused a `.session` folder and files others may write, but not the folder it was given:
 * in a world-writable folder anyone may make the `.session` (and its token) before the emulator
 * does. A world-writable folder is refused now, naming it, before anything is made in it; one
 * its group may write (user private groups make them so) is not.
 */
describe('security: --dev refuses a folder others may write', () => {
  let dir = ''
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  for (const mode of [0o777, 0o1777, 0o757]) {
    it(`a folder of mode ${mode.toString(8)} is refused, naming it, and nothing is made`, () => {
      dir = mkdtempSync(join(tmpdir(), 'aio-dev-folder-'))
      chmodSync(dir, mode)
      assert.throws(
        () => prepareDevLayout(dir),
        (err: Error) => err.message.includes('others may write') && err.message.includes(`${dir} (mode`),
      )
      assert.equal(existsSync(join(dir, '.session')), false)
    })
  }
})
