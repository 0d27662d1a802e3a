import assert from 'node:assert/strict'
import { wholeNumber } from '../../src/checks/whole-number'

describe('whole numbers: the one reading for options, flags and node settings', function () {
  it('takes safe integers of at least min, as numbers or decimal digits with spaces around', function () {
    assert.equal(wholeNumber(0), 0)
    assert.equal(wholeNumber(42, 1), 42)
    assert.equal(wholeNumber('1500'), 1500)
    assert.equal(wholeNumber(' 7 ', 1), 7)
    assert.equal(wholeNumber(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER)
  })

  it('refuses below min, fractions, unsafe integers, signs, exponents, hex, blanks and other types', function () {
    for (const [value, min] of [
      [0, 1],
      ['0', 1],
      [-1, 0],
      [1.5, 0],
      [Number.MAX_SAFE_INTEGER + 1, 0],
      [NaN, 0],
      [Infinity, 0],
      ['-1', 0],
      ['+1', 0],
      ['1e3', 0],
      ['0x10', 0],
      ['1.0', 0],
      ['', 0],
      ['  ', 0],
      ['12345678901234567', 0],
      [null, 0],
      [undefined, 0],
      [true, 0],
      [[1], 0],
    ] as Array<[unknown, number]>) {
      assert.equal(wholeNumber(value, min), undefined, `${JSON.stringify(value)} at least ${min}`)
    }
  })
})
