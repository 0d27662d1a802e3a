import type { NodeAPI, NodeMessage } from 'node-red'
import { CancelledError } from '../../src/diagnostics/errors'
import { InputError } from '../lib/errors'
import { LinearRegex } from './linear-regex'

/** A prepared JSONata expression, as RED.util.prepareJSONataExpression returns it. */
export type Expression = ReturnType<NodeAPI['util']['prepareJSONataExpression']>

/**
 * JSONata evaluation steps nested inside one another that one evaluation may reach (a non-tail recursion ends here).
 */
export const MAX_EXPRESSION_DEPTH = 10_000
/** How long an evaluation runs before it lets the runtime's other work (HTTP, timers, signals) in. */
const SLICE_MS = 10
/** Steps between two looks at the clock. */
const STEPS_PER_CHECK = 64

/** The evaluation's own limits, found by the hooks through the input object (never visible to the expression). */
const BUDGET = Symbol('aio-statestore expression budget')

interface Budget {
  readonly timeoutMs: number
  readonly start: number
  sliceStart: number
  depth: number
  steps: number
  /** Set when the node closes: the evaluation stops at its next step. */
  cancelled: boolean
}

/**
 * JSONata calls these at each step when the expression's environment binds them: by symbol in the
 * jsonata Node-RED bundles (4.1 and later), by name in jsonata 2.0 from npm (Node-RED 4.0).
 */
const ENTRY = [Symbol.for('jsonata.__evaluate_entry'), '__evaluate_entry'] as const
const EXIT = [Symbol.for('jsonata.__evaluate_exit'), '__evaluate_exit'] as const
type Assign = (name: string | symbol, value: unknown) => void

interface Frame {
  lookup(name: string | symbol): unknown
  /** The evaluation's own frame, in the jsonata of Node-RED 4.1 and later: its RegexEngine makes the regex literals. */
  base?: { RegexEngine?: unknown }
}

function budgetOf(environment: Frame): Budget | undefined {
  const root = environment.lookup('$') as { [BUDGET]?: Budget } | null | undefined
  return root && typeof root === 'object' ? root[BUDGET] : undefined
}

export interface Limits {
  timeoutMs: number
  /** The texts of the errors; `errors.expressionTimeout` and `errors.expressionTooDeep` are read. */
  t: (key: string, substitutions?: Record<string, string | number>) => string
}

/**
 * Makes an expression's evaluations bounded: each step counts against the evaluation's time and
 * depth, and every SLICE_MS the evaluation waits for one turn of the event loop, so that a runaway
 * expression (JSONata's tail calls never overflow the stack) neither holds the runtime nor outlives
 * its time. Its regular expressions match in linear time (linear-regex.ts), since one match is one
 * step. An expression that names the hooks itself is refused: in jsonata 2.0 it could unbind them.
 */
export function bound(expression: Expression, source: string, limits: Limits): Expression {
  if (source.includes('__evaluate_')) throw new Error('the names $__evaluate_entry and $__evaluate_exit are reserved')
  const assign = expression.assign.bind(expression) as Assign
  const entry = (_expr: unknown, _input: unknown, environment: Frame) => {
    const budget = budgetOf(environment)
    if (!budget) return undefined
    // Before the first regex literal is made: each evaluation sets RegexEngine to RegExp at its start.
    if (environment.base && environment.base.RegexEngine !== LinearRegex) environment.base.RegexEngine = LinearRegex
    budget.depth += 1
    if (budget.cancelled) throw new CancelledError('the node closed during the expression')
    if (budget.depth > MAX_EXPRESSION_DEPTH) {
      throw new InputError('ExpressionTooDeep', limits.t('errors.expressionTooDeep', { max: MAX_EXPRESSION_DEPTH }))
    }
    budget.steps += 1
    if (budget.steps % STEPS_PER_CHECK !== 0) return undefined
    const now = performance.now()
    if (now - budget.start > budget.timeoutMs) {
      throw new InputError('ExpressionTimeout', limits.t('errors.expressionTimeout', { timeout: budget.timeoutMs }))
    }
    if (now - budget.sliceStart < SLICE_MS) return undefined
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        budget.sliceStart = performance.now()
        resolve()
      }),
    )
  }
  const exit = (_expr: unknown, _input: unknown, environment: Frame) => {
    const budget = budgetOf(environment)
    if (budget) budget.depth -= 1
  }
  for (const name of ENTRY) assign(name, entry)
  for (const name of EXIT) assign(name, exit)
  return expression
}

/**
 * One evaluation of a bounded expression over `input`; `running` holds it while it runs, so that a close can stop it.
 */
export function evaluateBounded(
  RED: NodeAPI,
  expression: Expression,
  input: object,
  timeoutMs: number,
  running: Set<Budget>,
): Promise<unknown> {
  const start = performance.now()
  const budget: Budget = { timeoutMs, start, sliceStart: start, depth: 0, steps: 0, cancelled: false }
  Object.defineProperty(input, BUDGET, { value: budget, enumerable: false })
  running.add(budget)
  return new Promise<unknown>((resolve, reject) => {
    RED.util.evaluateJSONataExpression(expression, input as NodeMessage, (err, result) => {
      running.delete(budget)
      if (err) reject(err)
      else resolve(result)
    })
  })
}

/** Stops every evaluation in `running` at its next step. */
export function cancelAll(running: Set<Budget>): void {
  for (const budget of running) budget.cancelled = true
}

export type Running = Set<Budget>
