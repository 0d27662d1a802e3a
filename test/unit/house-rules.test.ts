/**
 * The house rules of CONTRIBUTING.md that are not about imports: a source file over 350 lines has
 * its reason in docs/architecture.md ("Files over 350 lines"), and comments state the rule, not
 * the story of how it was found. A breach names the file and the line.
 */
import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

const ROOT = resolve(__dirname, '..', '..')
const MAX_LINES = 350
/** The formatter's width (.prettierrc.json), which comments and strings must keep too. */
const MAX_WIDTH = 120

function sources(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...sources(path))
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

const FILES = [...sources('src'), ...sources('nodes')].map((f) => relative(ROOT, join(ROOT, f)))

/** The files docs/architecture.md gives a reason for, from its "Files over 350 lines" table. */
function filesWithReasons(architecture: string): Set<string> {
  const section = architecture.split(/^## Files over 350 lines$/m)[1]?.split(/^## /m)[0] ?? ''
  const named = new Set<string>()
  for (const line of section.split('\n')) {
    const row = /^\| `([^`]+)` \| (.+) \|$/.exec(line)
    if (row && row[2]!.trim().length > 0) named.add(row[1]!)
  }
  return named
}

/** Words that tell how something was found rather than what holds: the story goes in a test's name and the commit. */
const STORY = /\b(?:chaos run|seed \d{3,}|found by the chaos|turned out|used to be|before the fix|regression)\b/i

/** The comments of a TypeScript source, with the line each starts on (strings and code left out). */
function commentsOf(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = []
  const lines = text.split('\n')
  let block: { line: number; text: string } | null = null
  lines.forEach((raw, i) => {
    if (block) {
      block.text += ` ${raw}`
      if (raw.includes('*/')) {
        out.push(block)
        block = null
      }
      return
    }
    const trimmed = raw.trimStart()
    if (trimmed.startsWith('//')) out.push({ line: i + 1, text: trimmed })
    else if (trimmed.startsWith('/*')) {
      if (trimmed.includes('*/')) out.push({ line: i + 1, text: trimmed })
      else block = { line: i + 1, text: trimmed }
    } else {
      const tail = /\s\/\/\s.*$/.exec(raw)
      if (tail) out.push({ line: i + 1, text: tail[0] })
    }
  })
  return out
}

describe('house rules', () => {
  it(`a source file over ${MAX_LINES} lines has its reason in docs/architecture.md`, () => {
    const reasons = filesWithReasons(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'))
    const long = FILES.filter((f) => readFileSync(join(ROOT, f), 'utf8').split('\n').length > MAX_LINES)
    const unexplained = long.filter((f) => !reasons.has(f))
    assert.deepEqual(
      unexplained,
      [],
      `over ${MAX_LINES} lines with no reason under "Files over 350 lines": split them or say why`,
    )
  })

  it('the reasons table names only files that exist', () => {
    const reasons = filesWithReasons(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'))
    assert.ok(reasons.size > 0, 'the table was read')
    assert.deepEqual(
      [...reasons].filter((f) => !FILES.includes(f)),
      [],
    )
  })

  it('the reasons table is read as it is written, and a row without a reason does not count', () => {
    const doc =
      '## Files over 350 lines\n\n| file | why |\n| --- | --- |\n| `a.ts` | one concern |\n| `b.ts` |  |\n\n## Next\n| `c.ts` | elsewhere |\n'
    assert.deepEqual([...filesWithReasons(doc)], ['a.ts'])
  })

  it(`no line of src/ or nodes/ is wider than ${MAX_WIDTH} characters, the formatter's width`, () => {
    const width = (JSON.parse(readFileSync(join(ROOT, '.prettierrc.json'), 'utf8')) as { printWidth: number })
      .printWidth
    assert.equal(width, MAX_WIDTH, 'the formatter and this rule agree')
    const wide: string[] = []
    for (const f of FILES) {
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if ([...line].length > MAX_WIDTH) wide.push(`${f}:${i + 1}: ${[...line].length} characters`)
        })
    }
    assert.deepEqual(wide, [])
  })

  it('comments state the rule: no story of how it was found (that goes in the test name and the commit)', () => {
    const stories: string[] = []
    for (const f of FILES) {
      for (const c of commentsOf(readFileSync(join(ROOT, f), 'utf8')))
        if (STORY.test(c.text)) stories.push(`${f}:${c.line}: ${c.text.slice(0, 100)}`)
    }
    assert.deepEqual(stories, [])
  })

  it('the story check finds a story in a line comment, a block comment and a trailing comment, and not in code', () => {
    const text = [
      'const a = 1 // found by the chaos run',
      '/**',
      ' * A rule, (chaos run, seed 505).',
      ' */',
      '// the rule alone',
      "const s = 'a chaos run in a string'",
    ].join('\n')
    const found = commentsOf(text).filter((c) => STORY.test(c.text))
    assert.deepEqual(
      found.map((c) => c.line),
      [1, 2],
    )
  })

  it('the test tree is the three lanes, what they share and their data', () => {
    const entries = readdirSync(join(ROOT, 'test')).sort()
    assert.deepEqual(entries, ['fixtures', 'integration', 'support', 'system', 'unit'])
  })

  it('a spec imports nothing from a lane above its own', () => {
    const LANES = ['unit', 'integration', 'system']
    const specs = (lane: string): string[] => {
      const out: string[] = []
      const walk = (dir: string) => {
        for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
          const path = join(dir, entry.name)
          if (entry.isDirectory()) walk(path)
          else if (/\.(ts|mjs|cjs)$/.test(entry.name)) out.push(path)
        }
      }
      walk(join('test', lane))
      return out
    }
    const upward: string[] = []
    LANES.forEach((lane, rank) => {
      for (const file of specs(lane)) {
        for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(
          /(?:from|import\(|require\()\s*'(\.{1,2}\/[^']+)'/g,
        )) {
          const target = relative(join(ROOT, 'test'), resolve(ROOT, file, '..', m[1]!)).split('/')[0]!
          if (LANES.indexOf(target) > rank) upward.push(`${file} imports ${m[1]!} (the ${target} lane)`)
        }
      }
    })
    assert.deepEqual(upward, [])
  })
})
