import assert from 'node:assert/strict'
import fc from 'fast-check'
import { compileScanGlob } from '../../src/emulator/core/glob'
import { DEFAULT_SCAN_LIMITS, ScanWalks, type ScanAnswer } from '../../src/emulator/core/scan'

function matcher(pattern: string | Buffer): (key: string | Buffer) => boolean {
  const glob = compileScanGlob(Buffer.isBuffer(pattern) ? pattern : Buffer.from(pattern, 'utf8'))
  assert.ok(glob.ok, `compiles: ${String(pattern)}`)
  return (key) => glob.glob.matches((Buffer.isBuffer(key) ? key : Buffer.from(key, 'utf8')).toString('latin1'))
}

describe('SCAN glob', () => {
  it('matches the whole key with *, ?, sets, ranges, negation and escapes', () => {
    const cases: Array<[string, string[], string[]]> = [
      ['a*', ['a', 'abc', 'a/b/c'], ['ba', '']],
      ['*/temp', ['x/temp', '/temp', 'a/b/temp'], ['x/temp2', 'temp']],
      ['k?', ['k1', 'kk'], ['k', 'k12']],
      ['k[0-4]', ['k0', 'k4'], ['k5', 'k', 'k00']],
      ['k[4-0]', ['k0', 'k4'], ['k5']],
      ['k[!0-4]', ['k5', 'kx'], ['k0', 'k4', 'k']],
      ['k[^ab]', ['kc'], ['ka', 'kb']],
      ['k[abc]', ['ka', 'kc'], ['kd']],
      ['k[*]', ['k*'], ['kx']],
      ['k\\*', ['k*'], ['kx', 'k\\x']],
      ['k\\?', ['k?'], ['kx']],
      ['k[\\]]', ['k]'], ['k\\']],
      ['a.b(c)+$^', ['a.b(c)+$^'], ['aXb(c)+$^', 'a.b(cc)']],
      ['tail\\', ['tail\\'], ['tail']],
    ]
    for (const [pattern, yes, no] of cases) {
      const m = matcher(pattern)
      for (const k of yes) assert.ok(m(k), `${pattern} matches ${k}`)
      for (const k of no) assert.ok(!m(k), `${pattern} does not match ${k}`)
    }
  })

  it('works on bytes: ? is one byte, and bytes above 0x7f match themselves', () => {
    assert.ok(matcher('caf??')('café'), 'é is two bytes')
    assert.ok(!matcher('caf?')('café'))
    assert.ok(matcher(Buffer.from([0x6b, 0xff, 0x2a]))(Buffer.from([0x6b, 0xff, 0x00, 0x01])))
    assert.ok(!matcher(Buffer.from([0x6b, 0xfe, 0x2a]))(Buffer.from([0x6b, 0xff])))
  })

  it('refuses an unclosed or empty set', () => {
    for (const bad of ['k[0-4', 'k[', 'k[]', 'k[!]']) assert.equal(compileScanGlob(Buffer.from(bad)).ok, false, bad)
  })

  it('matches a key with any of its characters replaced by ? or a run of them by *', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 20 }), fc.nat(), fc.nat(), (key, a, b) => {
        const escape = (s: string) => s.replace(/[*?[\\]/g, '\\$&')
        const i = a % key.length
        const j = i + (b % (key.length - i + 1))
        assert.ok(matcher(escape(key))(key), 'itself, escaped')
        assert.ok(matcher(escape(key.slice(0, i)) + '?' + escape(key.slice(i + 1)))(key), 'one byte as ?')
        assert.ok(matcher(escape(key.slice(0, i)) + '*' + escape(key.slice(j)))(key), 'a run as *')
      }),
    )
  })
})

describe('SCAN walks', () => {
  const keys = Array.from({ length: 50 }, (_, i) => `k${i}`)
  const store = () => {
    const map = new Map(keys.map((k) => [k, true]))
    return { map, view: { ids: () => map.keys(), has: (id: string) => map.has(id) } }
  }
  const limits = { ...DEFAULT_SCAN_LIMITS, maxKeys: 10, idleMs: 1000, maxWalks: 2 }
  const page = (
    walks: ScanWalks,
    token: Buffer | null,
    pattern = 'k*',
    clientId = 'c',
  ): Extract<ScanAnswer, { ok: true }> => {
    const answer = walks.page({ pattern: Buffer.from(pattern), token, clientId, mayRead: () => true })
    assert.ok(answer.ok, JSON.stringify(answer))
    return answer
  }
  const refused = (walks: ScanWalks, token: Buffer, pattern = 'k*', clientId = 'c') => {
    const answer = walks.page({ pattern: Buffer.from(pattern), token, clientId, mayRead: () => true })
    assert.ok(!answer.ok && answer.refusal === 'ScanTokenUnknown', JSON.stringify(answer))
  }

  it('pages every key once, answers a retried token again, and keeps a finished walk for its last retry', () => {
    const walks = new ScanWalks(store().view, limits)
    const seen: string[] = []
    let token: Buffer | null = null
    let previous: Buffer | null
    let last: Extract<ScanAnswer, { ok: true }>
    do {
      last = page(walks, token)
      seen.push(...last.keys.map((k) => k.toString()))
      previous = token
      token = last.token
    } while (token)
    assert.deepEqual(seen.sort(), [...keys].sort())
    assert.deepEqual(page(walks, previous), last, 'the last page again')
  })

  it('forgets a walk left idle, and the least recently used one beyond maxWalks', () => {
    let now = 0
    const walks = new ScanWalks(store().view, limits, () => now)
    const a = page(walks, null).token!
    now = 999
    assert.ok(page(walks, a).token, 'still known just before idleMs')
    const b = page(walks, null).token!
    const c = page(walks, null).token!
    assert.equal(walks.size, 2)
    refused(walks, Buffer.concat([a.subarray(0, 8), Buffer.from([0, 0, 0, 2])]), 'k*')
    assert.ok(page(walks, b).token)
    now = 999 + 1000
    refused(walks, c)
    assert.equal(walks.size, 0)
  })

  it('refuses a token of another client or pattern, and a page out of order', () => {
    const walks = new ScanWalks(store().view, limits)
    const t1 = page(walks, null).token!
    refused(walks, t1, 'k*', 'someone else')
    refused(walks, t1, 'x*')
    const t2 = page(walks, t1).token!
    page(walks, t2)
    refused(walks, t1)
    refused(walks, Buffer.from('short'))
  })

  it('leaves out keys deleted before they are reached and keys the caller may not read', () => {
    const { map, view } = store()
    const walks = new ScanWalks(view, limits)
    const first = walks.page({
      pattern: Buffer.from('k*'),
      token: null,
      clientId: 'c',
      mayRead: (k) => !k.toString().endsWith('7'),
    })
    assert.ok(first.ok)
    map.delete('k49')
    const rest: string[] = []
    let token = first.token
    while (token) {
      const next = walks.page({
        pattern: Buffer.from('k*'),
        token,
        clientId: 'c',
        mayRead: (k) => !k.toString().endsWith('7'),
      })
      assert.ok(next.ok)
      rest.push(...next.keys.map((k) => k.toString()))
      token = next.token
    }
    const all = [...first.keys.map((k) => k.toString()), ...rest]
    assert.ok(!all.includes('k49'))
    assert.deepEqual(all.sort(), keys.filter((k) => k !== 'k49' && !k.endsWith('7')).sort())
  })
})
