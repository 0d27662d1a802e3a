/**
 * Mocha's timeouts on the suite's time scale (deadline.ts), loaded by .mocharc.cjs: every timeout a
 * test, hook or suite sets (and the default in .mocharc.cjs) is kept as written and read stretched,
 * so `this.timeout(30_000)` means 30 s on a quiet machine and proportionally more on a busy one. A
 * timeout's message gives both figures. The run's log says the scale at its start and end.
 */
import Mocha from 'mocha'
import { describeLimit, describeTimeScale, scaled } from './deadline'

/** What mocha's Runnable keeps of a timeout (private in its types). */
interface Timed {
  _timeout: number
  timeout(ms?: number | string): number | Timed
  _timeoutError(ms: number): Error
}

const runnable = Mocha.Runnable.prototype as unknown as Timed
const setOrGet = runnable.timeout
const timeoutError = runnable._timeoutError

// Read stretched, set as written.
runnable.timeout = function (this: Timed, ...args: [ms?: number | string]) {
  if (args.length === 0) return scaled(this._timeout)
  return setOrGet.apply(this, args)
}

runnable._timeoutError = function (this: Timed, ms: number) {
  const err = timeoutError.call(this, ms)
  err.message = err.message.replace(`Timeout of ${ms}ms`, `Timeout of ${describeLimit(this._timeout, ms)}`)
  return err
}

// Test#clone passes a read back to the setter: the copy keeps the timeout as written.
const test = Mocha.Test.prototype as unknown as { clone(this: Timed): Timed }
const clone = test.clone
test.clone = function (this: Timed) {
  const copy = clone.call(this)
  copy._timeout = this._timeout
  return copy
}

export const mochaGlobalSetup = (): void => {
  console.log(`  ${describeTimeScale()}`)
}

export const mochaGlobalTeardown = (): void => {
  console.log(`  ${describeTimeScale()} (at the end)`)
}
