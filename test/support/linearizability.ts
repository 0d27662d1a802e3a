/**
 * A linearizability checker: the Wing-Gong search with Lowe's memo of (operations linearized,
 * state) pairs, as Knossos and Porcupine do it. Written here because no npm library checks a
 * history against a model: the search is ~60 lines. An operation whose outcome is unknown (timed
 * out, connection lost) has no return: it may take effect at any point after its invocation, or
 * never.
 */

export interface Operation<I, O> {
  input: I
  /** undefined when the outcome is unknown. */
  output: O | undefined
  /** Monotonic ms. */
  invokedAt: number
  /** Monotonic ms; Infinity when the outcome is unknown. */
  returnedAt: number
}

export interface Model<S, I, O> {
  init: S
  /** The state after `input` with this `output`; undefined when the model cannot answer so from `state`. Output undefined: any answer. */
  step(state: S, input: I, output: O | undefined): S | undefined
  /** A string that tells states apart, for the memo. */
  key(state: S): string
}

export type Verdict =
  | { linearizable: true; steps: number }
  /** `stuck`: where the longest order found ran aground, the operation that returned before it could be taken. */
  | { linearizable: false; steps: number; stuck: number }
  | { linearizable: 'unknown'; steps: number }

interface Entry {
  op: number
  call: boolean
  time: number
  match: Entry | null
  prev: Entry | null
  next: Entry | null
}

/** Checks one key's history; gives up ('unknown') after `maxSteps` search steps. */
export function checkHistory<S, I, O>(
  model: Model<S, I, O>,
  ops: ReadonlyArray<Operation<I, O>>,
  maxSteps = 2_000_000,
): Verdict {
  const entries: Entry[] = []
  ops.forEach((o, op) => {
    const call: Entry = { op, call: true, time: o.invokedAt, match: null, prev: null, next: null }
    entries.push(call)
    if (Number.isFinite(o.returnedAt)) {
      const ret: Entry = { op, call: false, time: o.returnedAt, match: null, prev: null, next: null }
      call.match = ret
      entries.push(ret)
    }
  })
  // Calls before returns at the same instant: such operations count as concurrent, never as ordered.
  entries.sort((a, b) => a.time - b.time || (a.call === b.call ? 0 : a.call ? -1 : 1))
  const head: Entry = { op: -1, call: false, time: -Infinity, match: null, prev: null, next: null }
  let last = head
  for (const e of entries) {
    last.next = e
    e.prev = last
    last = e
  }
  const lift = (e: Entry) => {
    for (const x of e.match ? [e, e.match] : [e]) {
      x.prev!.next = x.next
      if (x.next) x.next.prev = x.prev
    }
  }
  const unlift = (e: Entry) => {
    for (const x of e.match ? [e.match, e] : [e]) {
      x.prev!.next = x
      if (x.next) x.next.prev = x
    }
  }

  const done = new Uint32Array(Math.ceil(ops.length / 32))
  const memo = new Set<string>()
  const stack: Array<{ entry: Entry; state: S }> = []
  let state = model.init
  let entry = head.next
  let steps = 0
  let deepest = { depth: -1, op: -1 }
  while (head.next !== null) {
    if (++steps > maxSteps) return { linearizable: 'unknown', steps }
    // Past the last return: what is left are operations of unknown outcome, which may never have happened.
    if (entry === null) return { linearizable: true, steps }
    if (entry.call) {
      const o = ops[entry.op]!
      const next = model.step(state, o.input, o.output)
      if (next !== undefined) {
        done[entry.op >> 5]! |= 1 << (entry.op & 31)
        const key = `${done.join(',')}|${model.key(next)}`
        if (!memo.has(key)) {
          memo.add(key)
          stack.push({ entry, state })
          state = next
          lift(entry)
          entry = head.next
          continue
        }
        done[entry.op >> 5]! &= ~(1 << (entry.op & 31))
      }
      entry = entry.next
    } else {
      if (stack.length > deepest.depth) deepest = { depth: stack.length, op: entry.op }
      const top = stack.pop()
      if (!top) return { linearizable: false, steps, stuck: deepest.op }
      state = top.state
      done[top.entry.op >> 5]! &= ~(1 << (top.entry.op & 31))
      unlift(top.entry)
      entry = top.entry.next
    }
  }
  return { linearizable: true, steps }
}

/** One key of the state store as the requests workload uses it. */
export type RegisterInput =
  | { f: 'get' }
  | { f: 'set'; value: string; condition: 'always' | 'NX' | 'NEX' }
  | { f: 'del' }
  | { f: 'vdel'; value: string }

export type RegisterOutput = { value: string | null } | { applied: boolean } | { deleted: number }

/** A key's value (null: absent). SET NX writes only an absent key, NEX an absent key or one with the same value; VDEL answers -1 for another value. */
export const registerModel: Model<string | null, RegisterInput, RegisterOutput> = {
  init: null,
  key: (s) => (s === null ? '\u0000' : `=${s}`),
  step(state, input, output) {
    switch (input.f) {
      case 'get':
        return output === undefined || (output as { value: string | null }).value === state ? state : undefined
      case 'set': {
        const applies =
          input.condition === 'always' || state === null || (input.condition === 'NEX' && state === input.value)
        if (output !== undefined && (output as { applied: boolean }).applied !== applies) return undefined
        return applies ? input.value : state
      }
      case 'del':
        if (output !== undefined && (output as { deleted: number }).deleted !== (state === null ? 0 : 1))
          return undefined
        return null
      case 'vdel': {
        const deleted = state === null ? 0 : state === input.value ? 1 : -1
        if (output !== undefined && (output as { deleted: number }).deleted !== deleted) return undefined
        return deleted === 1 ? null : state
      }
    }
  },
}
