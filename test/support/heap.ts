/** Reading the heap in tests that check a bounded memory. */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let gcFn: (() => void) | null = null

/**
 * Heap in use after a full collection. `--expose-gc` is set at run time (mocha's own options stay
 * as they are): V8 then hands a `gc` function to every new context.
 */
export function heapAfterGc(): number {
  if (!gcFn) {
    setFlagsFromString('--expose-gc')
    gcFn = runInNewContext('gc') as () => void
  }
  gcFn()
  gcFn()
  return process.memoryUsage().heapUsed
}
