import type { RespValue } from './types'

/**
 * The values of the fixed replies, one frozen object each, shared by every decode that gives them
 * (decoded values are read-only, see `RespValue`): the references return a bare `null` or number
 * for these, and an object per decode cost up to a third of such a decode (bench/codec.mjs).
 */
const fixed = <T extends RespValue>(value: T): T => Object.freeze(value)
export const OK = fixed({ kind: 'simple', value: 'OK' })
export const NULL_BULK = fixed({ kind: 'null', from: '$' })
export const NULL_ARRAY = fixed({ kind: 'null', from: '*' })
const MINUS_ONE = fixed({ kind: 'integer', value: -1 })
/** 0 to 255: counts and flags (DEL, VDEL, KEYNOTIFY) are all among them. */
const SMALL_INTEGERS = Array.from({ length: 256 }, (_, n) => fixed({ kind: 'integer', value: n }))
export const integerValue = (n: number): RespValue =>
  n >= 0 && n < SMALL_INTEGERS.length && !Object.is(n, -0)
    ? SMALL_INTEGERS[n]!
    : n === -1
      ? MINUS_ONE
      : { kind: 'integer', value: n }
