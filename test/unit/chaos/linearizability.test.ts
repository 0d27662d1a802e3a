/**
 * The chaos run's linearizability checker, by properties: histories made by running operations
 * one at a time against a plain register are accepted, also when each operation's interval is
 * widened around its effect and when some outcomes are forgotten (timed out); a sequential history
 * with one read changed is rejected; and fixed histories: a stale read, a write executed again
 * after a re-send, a timed-out write that explains a later read.
 */
import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  checkHistory,
  registerModel,
  type Operation,
  type RegisterInput,
  type RegisterOutput,
} from '../../support/linearizability'

type Op = Operation<RegisterInput, RegisterOutput>

/** The register, written independently of the model under test. */
function run(state: string | null, input: RegisterInput): [string | null, RegisterOutput] {
  if (input.f === 'get') return [state, { value: state }]
  if (input.f === 'del') return [null, { deleted: state === null ? 0 : 1 }]
  if (input.f === 'vdel') {
    if (state === null) return [null, { deleted: 0 }]
    return state === input.value ? [null, { deleted: 1 }] : [state, { deleted: -1 }]
  }
  const free = state === null || (input.condition === 'NEX' && state === input.value)
  if (input.condition === 'always' || free) return [input.value, { applied: true }]
  return [state, { applied: false }]
}

const value = fc.constantFrom('a', 'b', 'c')
const input: fc.Arbitrary<RegisterInput> = fc.oneof(
  fc.constant({ f: 'get' as const }),
  fc.record({
    f: fc.constant('set' as const),
    value,
    condition: fc.constantFrom('always' as const, 'NX' as const, 'NEX' as const),
  }),
  fc.constant({ f: 'del' as const }),
  fc.record({ f: fc.constant('vdel' as const), value }),
)

/** Runs the inputs in order; operation i takes effect at 100·i. */
function execute(inputs: RegisterInput[]): Array<{ input: RegisterInput; output: RegisterOutput; at: number }> {
  let state: string | null = null
  return inputs.map((i, n) => {
    const [next, output] = run(state, i)
    state = next
    return { input: i, output, at: 100 * n }
  })
}

const sequential = (inputs: RegisterInput[]): Op[] =>
  execute(inputs).map(({ input: i, output, at }) => ({ input: i, output, invokedAt: at, returnedAt: at + 10 }))

describe('chaos: the linearizability checker', () => {
  it('accepts every history run one operation at a time', () => {
    fc.assert(
      fc.property(
        fc.array(input, { maxLength: 40 }),
        (inputs) => checkHistory(registerModel, sequential(inputs)).linearizable === true,
      ),
    )
  })

  it('accepts histories whose intervals overlap around each effect, with some outcomes unknown', () => {
    const widened = fc.array(
      fc.tuple(
        input,
        fc.integer({ min: 0, max: 250 }),
        fc.integer({ min: 0, max: 250 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 9 }),
      ),
      { maxLength: 30 },
    )
    fc.assert(
      fc.property(widened, (rows) => {
        const done = execute(rows.map((r) => r[0]))
        const ops: Op[] = done.map(({ input: i, output, at }, n) => {
          const [, before, after, forget, dice] = rows[n]!
          // A forgotten (timed-out) operation may have happened or not: here it did.
          if (forget && dice < 3) return { input: i, output: undefined, invokedAt: at - before, returnedAt: Infinity }
          return { input: i, output, invokedAt: at - before, returnedAt: at + after }
        })
        return checkHistory(registerModel, ops).linearizable === true
      }),
    )
  })

  it('accepts a history with operations that timed out and never took effect', () => {
    fc.assert(
      fc.property(
        fc.array(input, { maxLength: 30 }),
        fc.array(fc.tuple(fc.nat(30), value), { maxLength: 5 }),
        (inputs, ghosts) => {
          const ops = sequential(inputs)
          for (const [at, v] of ghosts)
            ops.push({
              input: { f: 'set', value: `${v}-never`, condition: 'always' },
              output: undefined,
              invokedAt: 100 * at + 1,
              returnedAt: Infinity,
            })
          return checkHistory(registerModel, ops).linearizable === true
        },
      ),
    )
  })

  it('rejects a one-at-a-time history in which one read saw another value', () => {
    const withRead = fc
      .array(input, { minLength: 1, maxLength: 30 })
      .chain((inputs) => fc.tuple(fc.constant(inputs), fc.nat(inputs.length), fc.constantFrom('a', 'b', 'c', null)))
    fc.assert(
      fc.property(withRead, ([inputs, at, seen]) => {
        const ops = sequential([...inputs.slice(0, at), { f: 'get' }, ...inputs.slice(at)])
        const read = ops[at]!
        fc.pre((read.output as { value: string | null }).value !== seen)
        read.output = { value: seen }
        const verdict = checkHistory(registerModel, ops)
        return verdict.linearizable === false
      }),
    )
  })

  it('rejects a planted stale read and a write executed again after a re-send', () => {
    const set = (v: string, from: number, to: number): Op => ({
      input: { f: 'set', value: v, condition: 'always' },
      output: { applied: true },
      invokedAt: from,
      returnedAt: to,
    })
    const get = (v: string | null, from: number, to: number): Op => ({
      input: { f: 'get' },
      output: { value: v },
      invokedAt: from,
      returnedAt: to,
    })
    const stale = [set('a', 0, 10), set('b', 20, 30), get('a', 40, 50)]
    const verdict = checkHistory(registerModel, stale)
    assert.equal(verdict.linearizable, false)
    assert.equal(verdict.linearizable === false && verdict.stuck, 2, 'the read is the operation no order explains')
    // a is read, overwritten by b, and comes back: a second execution of the first write.
    assert.equal(
      checkHistory(registerModel, [set('a', 0, 10), get('a', 20, 30), set('b', 40, 50), get('a', 60, 70)]).linearizable,
      false,
    )
    // The same reads with the first write concurrent with everything are fine: it took effect last.
    assert.equal(checkHistory(registerModel, [set('a', 0, 80), set('b', 40, 50), get('a', 60, 70)]).linearizable, true)
    // A timed-out write explains a value that comes back; a read of a value nobody wrote is never explained.
    assert.equal(
      checkHistory(registerModel, [
        set('b', 0, 10),
        { ...set('a', 5, 0), returnedAt: Infinity, output: undefined },
        get('b', 20, 30),
        get('a', 40, 50),
      ]).linearizable,
      true,
    )
    assert.equal(checkHistory(registerModel, [set('b', 0, 10), get('z', 40, 50)]).linearizable, false)
  })
})
