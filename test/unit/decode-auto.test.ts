import assert from 'node:assert/strict'
import fc from 'fast-check'
import { decodeAuto } from '../../src/formats/value'

/** What `auto` means: JSON if the text parses as JSON, else the text (bytes that are not UTF-8 stay bytes). */
function reference(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

describe("decodeAuto: the 'auto' output of get and watch keys", function () {
  it('gives what JSON.parse gives for JSON and the text for anything else, blank space around it or not', function () {
    const blank = fc
      .array(fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\ufeff'), { maxLength: 3 })
      .map((a) => a.join(''))
    const texts = fc.oneof(
      fc.json(),
      fc.string(),
      fc.constantFrom('', 'true', 'nul', '-', '-1', '.5', '+1', 'tru', '"', '01', 'v'.repeat(100)),
    )
    fc.assert(
      fc.property(blank, texts, blank, (before, text, after) => {
        const whole = `${before}${text}${after}`
        assert.deepEqual(decodeAuto(Buffer.from(whole, 'utf8')), reference(whole))
      }),
      { numRuns: 3000 },
    )
  })

  it('keeps bytes that are not UTF-8 as a Buffer', function () {
    assert.deepEqual(decodeAuto(Buffer.from([0xff, 0x31])), Buffer.from([0xff, 0x31]))
  })
})
