/**
 * The lock mode line's machine (nodes/lock/lock-line.ts) without a client or a timer: every phase
 * against every input, the ignored ones included (a late timer, a take already settled, a hold
 * already ended), for one holder at a time and for a semaphore's two.
 */
import assert from 'node:assert/strict'
import {
  FREE,
  lineStep,
  type LineEffect,
  type LineInput,
  type LinePhase,
  type LineRules,
} from '../../nodes/lock/lock-line'

const MUTEX: LineRules = { limit: 1, queueSize: 2 }
const TWO: LineRules = { limit: 2, queueSize: 1 }

const ids = (s: string | undefined): number[] => (s ? s.split(',').map(Number) : [])

/** A phase written as `taking t:1s h:4 w:2,3` (s: slow), `held h:1`, `closed w:2` or `free`. */
function phase(text: string): LinePhase {
  const [kind, ...parts] = text.split(' ')
  const part = (p: string) => parts.find((x) => x.startsWith(`${p}:`))?.slice(2)
  const holds = ids(part('h'))
  const waiting = ids(part('w'))
  const t = part('t')
  if (kind === 'free') return FREE
  if (kind === 'closed') return { kind, holds, waiting }
  if (kind === 'held') return { kind, holds, waiting }
  assert.ok(t, `a taking phase names its taker: ${text}`)
  return { kind: 'taking', taker: { id: Number(t.replace('s', '')), slow: t.endsWith('s') }, holds, waiting }
}

function show(p: LinePhase): string {
  if (p.kind === 'free') return 'free'
  const taker = p.kind === 'taking' ? ` t:${p.taker.id}${p.taker.slow ? 's' : ''}` : ''
  const holds = p.holds.length ? ` h:${p.holds.join(',')}` : ''
  const waiting = p.waiting.length ? ` w:${p.waiting.join(',')}` : ''
  return `${p.kind}${taker}${holds}${waiting}`
}

const list = (i: readonly number[]) => (i.length ? i.join(',') : '-')
function effect(e: LineEffect): string {
  if (e.kind === 'end') return `end:w${list(e.waiting)}/h${list(e.holds)}`
  return 'id' in e ? `${e.kind}:${e.id}` : e.kind
}

const INPUTS: Record<string, LineInput> = {
  'arrive 9': { kind: 'arrive', id: 9 },
  'timeout 2': { kind: 'timeout', id: 2 },
  'timeout 9': { kind: 'timeout', id: 9 },
  'slow 1': { kind: 'slow', id: 1 },
  'slow 2': { kind: 'slow', id: 2 },
  'acquired 1': { kind: 'acquired', id: 1 },
  'acquired 2': { kind: 'acquired', id: 2 },
  'settled 1': { kind: 'settled', id: 1 },
  'settled 2': { kind: 'settled', id: 2 },
  'released 1': { kind: 'released', id: 1 },
  'released 2': { kind: 'released', id: 2 },
  close: { kind: 'close' },
}
type Row = Record<keyof typeof INPUTS, string>

/**
 * Each phase's outcome for every input: `=` is ignored (the same phase, no effect); else the next
 * phase, then after `;` the effects in order.
 */
// prettier-ignore
const TABLE: Array<[LineRules, string, Row]> = [
  [MUTEX, 'free', {
    'arrive 9': 'taking t:9 ; report take:9', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': '=', 'slow 2': '=',
    'acquired 1': '=', 'acquired 2': '=', 'settled 1': '=', 'settled 2': '=', 'released 1': '=', 'released 2': '=',
    close: 'closed ; end:w-/h-',
  }],
  [MUTEX, 'taking t:1', {
    'arrive 9': 'taking t:1 w:9 ; report', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': 'taking t:1s ; report',
    'slow 2': '=', 'acquired 1': 'held h:1 ; show', 'acquired 2': '=', 'settled 1': 'free ; forget report',
    'settled 2': '=', 'released 1': '=', 'released 2': '=', close: 'closed ; end:w-/h-',
  }],
  [MUTEX, 'taking t:1s', {
    'arrive 9': 'taking t:1s w:9 ; report', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': '=', 'slow 2': '=',
    'acquired 1': 'held h:1 ; show', 'acquired 2': '=', 'settled 1': 'free ; forget report', 'settled 2': '=',
    'released 1': '=', 'released 2': '=', close: 'closed ; end:w-/h-',
  }],
  [MUTEX, 'taking t:1 w:2', {
    'arrive 9': 'taking t:1 w:2,9 ; report', 'timeout 2': 'taking t:1 ; report giveUp:2', 'timeout 9': '=',
    'slow 1': 'taking t:1s w:2 ; report', 'slow 2': '=', 'acquired 1': 'held h:1 w:2 ; show', 'acquired 2': '=',
    'settled 1': 'taking t:2 ; report take:2', 'settled 2': '=', 'released 1': '=', 'released 2': '=',
    close: 'closed ; end:w2/h-',
  }],
  [MUTEX, 'taking t:1 w:2,3', {
    'arrive 9': '= ; full:9', 'timeout 2': 'taking t:1 w:3 ; report giveUp:2', 'timeout 9': '=',
    'slow 1': 'taking t:1s w:2,3 ; report', 'slow 2': '=', 'acquired 1': 'held h:1 w:2,3 ; show',
    'acquired 2': '=', 'settled 1': 'taking t:2 w:3 ; report take:2', 'settled 2': '=', 'released 1': '=',
    'released 2': '=', close: 'closed ; end:w2,3/h-',
  }],
  [MUTEX, 'held h:1', {
    'arrive 9': 'held h:1 w:9 ; report', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': '=', 'slow 2': '=',
    'acquired 1': '=', 'acquired 2': '=', 'settled 1': 'held h:1 ; report', 'settled 2': 'held h:1 ; report',
    'released 1': 'free ; forget report', 'released 2': '=', close: 'closed h:1 ; end:w-/h1',
  }],
  [MUTEX, 'held h:1 w:2', {
    'arrive 9': 'held h:1 w:2,9 ; report', 'timeout 2': 'held h:1 ; report giveUp:2', 'timeout 9': '=',
    'slow 1': '=', 'slow 2': '=', 'acquired 1': '=', 'acquired 2': '=', 'settled 1': 'held h:1 w:2 ; report',
    'settled 2': 'held h:1 w:2 ; report', 'released 1': 'taking t:2 ; report take:2', 'released 2': '=',
    close: 'closed h:1 ; end:w2/h1',
  }],
  [MUTEX, 'held h:1 w:2,3', {
    'arrive 9': '= ; full:9', 'timeout 2': 'held h:1 w:3 ; report giveUp:2', 'timeout 9': '=', 'slow 1': '=',
    'slow 2': '=', 'acquired 1': '=', 'acquired 2': '=', 'settled 1': 'held h:1 w:2,3 ; report',
    'settled 2': 'held h:1 w:2,3 ; report', 'released 1': 'taking t:2 w:3 ; report take:2', 'released 2': '=',
    close: 'closed h:1 ; end:w2,3/h1',
  }],
  [MUTEX, 'closed h:1', {
    'arrive 9': 'closed h:1 w:9', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': '=', 'slow 2': '=',
    'acquired 1': '=', 'acquired 2': '=', 'settled 1': '=', 'settled 2': '=', 'released 1': 'closed',
    'released 2': '=', close: '=',
  }],
  [MUTEX, 'closed w:2', {
    'arrive 9': 'closed w:2,9', 'timeout 2': 'closed ; giveUp:2', 'timeout 9': '=', 'slow 1': '=', 'slow 2': '=',
    'acquired 1': '=', 'acquired 2': '=', 'settled 1': '=', 'settled 2': '=', 'released 1': '=', 'released 2': '=',
    close: '=',
  }],
  [TWO, 'held h:1', {
    'arrive 9': 'taking t:9 h:1 ; report take:9', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': '=', 'slow 2': '=',
    'acquired 1': '=', 'acquired 2': '=', 'settled 1': 'held h:1 ; report', 'settled 2': 'held h:1 ; report',
    'released 1': 'free ; forget report', 'released 2': '=', close: 'closed h:1 ; end:w-/h1',
  }],
  [TWO, 'taking t:2 h:1', {
    'arrive 9': 'taking t:2 h:1 w:9 ; report', 'timeout 2': '=', 'timeout 9': '=', 'slow 1': '=',
    'slow 2': 'taking t:2s h:1 ; report', 'acquired 1': '=', 'acquired 2': 'held h:1,2 ; show', 'settled 1': '=',
    'settled 2': 'held h:1 ; report', 'released 1': 'taking t:2 ; report', 'released 2': '=',
    close: 'closed h:1 ; end:w-/h1',
  }],
  [TWO, 'held h:1,4 w:2', {
    'arrive 9': '= ; full:9', 'timeout 2': 'held h:1,4 ; report giveUp:2', 'timeout 9': '=', 'slow 1': '=',
    'slow 2': '=', 'acquired 1': '=', 'acquired 2': '=', 'settled 1': 'held h:1,4 w:2 ; report',
    'settled 2': 'held h:1,4 w:2 ; report', 'released 1': 'taking t:2 h:4 ; report take:2', 'released 2': '=',
    close: 'closed h:1,4 ; end:w2/h1,4',
  }],
]

describe('unit: the lock mode line', () => {
  for (const [rules, from, row] of TABLE) {
    const who = rules.limit === 1 ? 'one holder' : `${rules.limit} holders`
    for (const [name, input] of Object.entries(INPUTS)) {
      const expected = row[name] ?? assert.fail(`the table has no outcome of ${name} from ${from}`)
      it(`${who}, ${from}: ${name} → ${expected}`, () => {
        const start = phase(from)
        const { phase: to, effects } = lineStep(start, input, rules)
        const [next, told = ''] = expected.split(' ; ')
        assert.equal(show(to), next === '=' ? from : next)
        assert.equal(effects.map(effect).join(' '), expected === '=' ? '' : told)
        if (expected === '=') assert.equal(to, start, 'an ignored input keeps the phase as it was')
      })
    }
  }

  it('an open line with msgs waiting has a take in flight or every place held', () => {
    for (const [rules, from] of TABLE)
      for (const input of Object.values(INPUTS)) {
        const { phase: to } = lineStep(phase(from), input, rules)
        if (to.kind !== 'held' || to.waiting.length === 0) continue
        assert.ok(to.holds.length >= rules.limit, `${from} then ${input.kind}: ${show(to)} waits with a place free`)
      }
  })

  it('a line serves its waiters in the order they came, each take after the last hold ends', () => {
    let p: LinePhase = FREE
    const taken: number[] = []
    const run = (input: LineInput) => {
      const step = lineStep(p, input, { limit: 1, queueSize: 5 })
      p = step.phase
      for (const e of step.effects) if (e.kind === 'take') taken.push(e.id)
    }
    for (const id of [1, 2, 3]) run({ kind: 'arrive', id })
    for (const id of [1, 2, 3]) {
      run({ kind: 'acquired', id })
      run({ kind: 'settled', id })
      run({ kind: 'released', id })
    }
    assert.deepEqual(taken, [1, 2, 3])
    assert.equal(p.kind, 'free')
  })
})
