import { decodeExact, RespProtocolError } from '../../resp'
import type { ServiceErrorCode } from '../../diagnostics/errors'
import type { SetCondition } from '../../protocol'

/** A request payload understood: one of the verbs of the state store, with its arguments as bytes. */
export type Command =
  | { verb: 'GET'; key: Buffer }
  | { verb: 'SET'; key: Buffer; value: Buffer; condition: SetCondition; expiryMs?: number }
  | { verb: 'DEL'; key: Buffer }
  | { verb: 'VDEL'; key: Buffer; value: Buffer }
  | { verb: 'KEYNOTIFY'; key: Buffer; stop: boolean }
  /** Designed in the SDKs (ADR 34), not in a released broker; see scan.ts. */
  | { verb: 'SCAN'; pattern: Buffer; token: Buffer | null }

export type Verb = Command['verb']

export type ParseResult = { ok: true; command: Command } | { ok: false; code: ServiceErrorCode; detail: string }

/** How many arguments after the verb each verb takes (min, max). */
const ARITY: Record<Verb, [number, number]> = {
  GET: [1, 1],
  SET: [2, Infinity],
  DEL: [1, 1],
  VDEL: [2, 2],
  KEYNOTIFY: [1, 2],
  SCAN: [1, 2],
}

/**
 * Parses a request payload: a RESP3 array of bulk strings, upper-case verb first. Anything else is
 * refused with the error the service gives (`syntax error`, `unknown command`,
 * `wrong number of arguments`, `the key length is zero`). Never throws.
 */
export function parseCommand(payload: Buffer): ParseResult {
  let args: Buffer[]
  try {
    const value = decodeExact(payload)
    if (value.kind !== 'array') return fail('SyntaxError', `the payload is a RESP3 ${value.kind}, not an array`)
    args = []
    for (const item of value.value) {
      if (item.kind !== 'bulk')
        return fail('SyntaxError', `an element of the request array is a ${item.kind}, not a bulk string`)
      args.push(item.value)
    }
  } catch (err) {
    if (err instanceof RespProtocolError) return fail('SyntaxError', err.message)
    throw err
  }
  if (args.length === 0) return fail('SyntaxError', 'empty request array')
  const verb = args[0]!.toString('latin1')
  if (!Object.hasOwn(ARITY, verb)) return fail('UnknownCommand', `unknown verb ${JSON.stringify(verb.slice(0, 64))}`)
  const v = verb as Verb
  const [min, max] = ARITY[v]
  const n = args.length - 1
  if (n < min || n > max)
    return fail('WrongNumberOfArguments', `${v} takes ${min === max ? min : `${min} to ${max}`} argument(s), got ${n}`)
  const key = args[1]!
  if (v === 'SCAN') {
    if (key.length === 0) return fail('SyntaxError', 'SCAN with an empty pattern')
    return { ok: true, command: { verb: v, pattern: key, token: n === 2 ? args[2]! : null } }
  }
  if (key.length === 0) return fail('KeyLengthZero', `${v} with an empty key`)
  switch (v) {
    case 'GET':
    case 'DEL':
      return { ok: true, command: { verb: v, key } }
    case 'VDEL':
      return { ok: true, command: { verb: v, key, value: args[2]! } }
    case 'KEYNOTIFY':
      if (n === 2 && args[2]!.toString('latin1') !== 'STOP')
        return fail('SyntaxError', 'KEYNOTIFY takes only STOP after the key')
      return { ok: true, command: { verb: v, key, stop: n === 2 } }
    case 'SET':
      return parseSet(key, args[2]!, args.slice(3))
  }
}

/**
 * SET options, in any order: at most one condition (NX or NEX; repeating the same one is harmless,
 * as in Redis) and at most one `PX <ms>` with a whole, positive number of milliseconds.
 */
function parseSet(key: Buffer, value: Buffer, options: Buffer[]): ParseResult {
  let condition: SetCondition = 'always'
  let expiryMs: number | undefined
  for (let i = 0; i < options.length; i++) {
    const word = options[i]!.toString('latin1')
    if (word === 'NX' || word === 'NEX') {
      if (condition !== 'always' && condition !== word) return fail('SyntaxError', 'SET with both NX and NEX')
      condition = word
    } else if (word === 'PX') {
      if (expiryMs !== undefined) return fail('SyntaxError', 'SET with PX twice')
      const arg = options[++i]
      if (arg === undefined) return fail('SyntaxError', 'SET PX without a number of milliseconds')
      const text = arg.toString('latin1')
      const ms = /^[0-9]{1,16}$/.test(text) ? Number(text) : NaN
      if (!Number.isSafeInteger(ms) || ms <= 0)
        return fail(
          'SyntaxError',
          `SET PX ${JSON.stringify(text.slice(0, 32))} is not a whole, positive number of milliseconds`,
        )
      expiryMs = ms
    } else {
      return fail('SyntaxError', `unknown SET option ${JSON.stringify(word.slice(0, 32))}`)
    }
  }
  return { ok: true, command: { verb: 'SET', key, value, condition, ...(expiryMs !== undefined ? { expiryMs } : {}) } }
}

function fail(code: ServiceErrorCode, detail: string): ParseResult {
  return { ok: false, code, detail }
}

/** A command on one key. */
export type KeyCommand = Exclude<Command, { verb: 'SCAN' }>

/** What the verb needs from the authorization rules. */
export function accessOf(command: KeyCommand): 'read' | 'write' {
  return command.verb === 'GET' || command.verb === 'KEYNOTIFY' ? 'read' : 'write'
}
