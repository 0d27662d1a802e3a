// What each example must print in the debug sidebar when deployed against the emulator, as
// examples/README.md describes it to users. One entry per examples/*.json (the smoke test checks).
import type { DebugMessage } from './node-red'

export interface ExampleRun {
  /** Presses the inject node with this name. */
  inject(name: string): Promise<void>
  /** Resolves with check's first non-undefined result over the debug messages so far. */
  waitFor<T>(check: (messages: DebugMessage[]) => T | undefined, timeoutMs?: number): Promise<T>
  /** Selects the debug output of the debug node with this name (warnings and errors excluded). */
  debug(name: string): (messages: DebugMessage[]) => DebugMessage[]
}

export interface Expectation {
  run(example: ExampleRun): Promise<void>
  /** Node errors/warnings the example provokes on purpose (matched against the message text). */
  allowErrors?: RegExp[]
}

export const EXPECTATIONS: Record<string, Expectation> = {}
