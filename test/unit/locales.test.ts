/**
 * The translations keep up with English: every language Node-RED's editor ships has every file and
 * every key of nodes/locales/en-US, with the same __placeholders__, and every help page keeps the
 * structure of the English one (headings, the property lists with their names and types, the
 * numbered outputs, the links and the code). The next English change that is not carried into a
 * language fails here, naming the language, the file and the key. The editor files' own keys are
 * checked against en-US too, so a text the editor builds cannot point at a missing key.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
const repoRoot = join(__dirname, '..', '..')

const LOCALES = join(repoRoot, 'nodes', 'locales')
const ENGLISH = 'en-US'
/** The languages of the Node-RED editor this package runs in (its locales folder lists them). */
const NODE_RED_LANGUAGES = readdirSync(join(repoRoot, 'node_modules', '@node-red', 'editor-client', 'locales'))
  .filter((l) => l !== ENGLISH)
  .sort()
const englishFiles = readdirSync(join(LOCALES, ENGLISH)).sort()
const languages = readdirSync(LOCALES)
  .filter((l) => l !== ENGLISH)
  .sort()

type Catalogue = { [key: string]: string | Catalogue }

function read(lang: string, file: string): string {
  return readFileSync(join(LOCALES, lang, file), 'utf8')
}

/** Every leaf of a catalogue as dotted key → text. */
function leaves(catalogue: Catalogue, prefix = ''): Map<string, string> {
  const out = new Map<string, string>()
  for (const [k, v] of Object.entries(catalogue)) {
    if (typeof v === 'string') out.set(prefix + k, v)
    else if (v && typeof v === 'object' && !Array.isArray(v))
      for (const [kk, vv] of leaves(v, `${prefix}${k}.`)) out.set(kk, vv)
    else throw new Error(`${prefix}${k} is neither a text nor a group of texts`)
  }
  return out
}

/**
 * A plural form beside its key (i18next's `_one`, `_few`, `_many`; the key itself is the `other`
 * form and every language's fallback): each language has the forms its own plural rules use.
 */
const PLURAL_FORM = /_(zero|one|two|few|many)$/

/** The keys to compare across languages: a plural form counts as its key. */
function withoutPluralForms(keys: Iterable<string>): Set<string> {
  return new Set([...keys].map((k) => k.replace(PLURAL_FORM, '')))
}

/** The plural categories a language's counts of 0 to 1000 fall in, `other` aside (it is the key itself). */
function pluralForms(lang: string): string[] {
  const rules = new Intl.PluralRules(lang)
  const used = new Set<string>()
  for (let n = 0; n <= 1000; n++) used.add(rules.select(n))
  used.delete('other')
  return [...used].sort()
}

function placeholders(text: string): string[] {
  return [...text.matchAll(/__\w+__/g)].map((m) => m[0]).sort()
}

/** What a translated help page must keep from the English one. */
function helpStructure(html: string) {
  const lines = html.split('\n')
  return {
    open: lines[0],
    close: lines.filter((l) => l.trim() !== '').at(-1),
    headings: lines.filter((l) => /^#{1,6} /.test(l)).length,
    // `: name (type) : description`: the name and the type are what a msg carries, never translated;
    // a name in italics (*other properties*) describes, and is translated.
    properties: lines
      .filter((l) => l.startsWith(': '))
      .map(
        (l) =>
          /^: ([^:]*?) \(([^)]*)\) :/
            .exec(l)
            ?.slice(1, 3)
            .map((p) => p.replace(/^\*.*\*$/, '*…*'))
            .join(' ') ?? `unreadable: ${l}`,
      ),
    numbered: lines.filter((l) => /^\d+\. /.test(l)).map((l) => l.split('.')[0]),
    links: [...html.matchAll(/\]\((\S+?)\)/g)].map((m) => m[1]),
    code: new Set([...html.matchAll(/`([^`\n]+)`/g)].map((m) => m[1])),
  }
}

describe('locales: every language has every English text', function () {
  it("covers every language of Node-RED's editor", function () {
    assert.deepEqual(
      languages,
      NODE_RED_LANGUAGES,
      'nodes/locales has a folder for each language Node-RED ships, and no other',
    )
  })

  for (const lang of languages) {
    describe(lang, function () {
      it('has the files en-US has, and no others', function () {
        assert.deepEqual(readdirSync(join(LOCALES, lang)).sort(), englishFiles)
      })

      for (const file of englishFiles.filter((f) => f.endsWith('.json'))) {
        it(`${file}: every key, no stale key, the same placeholders`, function () {
          if (!existsSync(join(LOCALES, lang, file))) assert.fail(`${lang}/${file} is missing`)
          const english = leaves(JSON.parse(read(ENGLISH, file)) as Catalogue)
          const translated = leaves(JSON.parse(read(lang, file)) as Catalogue)
          const englishKeys = withoutPluralForms(english.keys())
          const translatedKeys = withoutPluralForms(translated.keys())
          assert.deepEqual(
            [...englishKeys].filter((k) => !translatedKeys.has(k)),
            [],
            `${lang}/${file}: keys en-US has and this file misses`,
          )
          assert.deepEqual(
            [...translatedKeys].filter((k) => !englishKeys.has(k)),
            [],
            `${lang}/${file}: keys en-US no longer has`,
          )
          const counted = new Set(
            [...english.keys()].filter((k) => PLURAL_FORM.test(k)).map((k) => k.replace(PLURAL_FORM, '')),
          )
          for (const key of counted) {
            const forms = pluralForms(lang).map((form) => `${key}_${form}`)
            assert.deepEqual(
              forms.filter((k) => !translated.has(k)),
              [],
              `${lang}/${file} ${key}: the plural forms ${lang} counts with`,
            )
          }
          for (const [key, text] of translated) {
            const base = english.get(key) ?? english.get(key.replace(PLURAL_FORM, ''))!
            assert.notEqual(text.trim(), '', `${lang}/${file} ${key} is empty`)
            assert.deepEqual(placeholders(text), placeholders(base), `${lang}/${file} ${key}: placeholders changed`)
          }
        })
      }

      for (const file of englishFiles.filter((f) => f.endsWith('.html'))) {
        it(`${file}: the help keeps its structure, property names, types, links and code`, function () {
          if (!existsSync(join(LOCALES, lang, file))) assert.fail(`${lang}/${file} is missing`)
          const english = helpStructure(read(ENGLISH, file))
          const translated = helpStructure(read(lang, file))
          assert.equal(translated.open, english.open, `${lang}/${file}: the <script> line`)
          assert.equal(translated.close, english.close, `${lang}/${file}: the closing </script>`)
          assert.equal(translated.headings, english.headings, `${lang}/${file}: number of ### headings`)
          assert.deepEqual(translated.properties, english.properties, `${lang}/${file}: the ": name (type) :" lines`)
          assert.deepEqual(translated.numbered, english.numbered, `${lang}/${file}: the numbered outputs`)
          assert.deepEqual(translated.links, english.links, `${lang}/${file}: the links`)
          assert.deepEqual(
            [...english.code].filter((c) => !translated.code.has(c)),
            [],
            `${lang}/${file}: code spans the translation lost`,
          )
        })
      }

      it('names the palette category alike in every node file', function () {
        const labels = new Set(
          englishFiles
            .filter((f) => f.endsWith('.json') && f !== 'ss-config.json' && f !== 'ss-sidebar.json')
            .map((f) => leaves(JSON.parse(read(lang, f)) as Catalogue).get('palette.label.state_store')),
        )
        assert.equal(labels.size, 1, `${lang}: the palette category is named ${[...labels].join(' / ')}`)
      })
    })
  }
})

/** A key the editor files ask for, with the catalogue file it must be in. */
interface UsedKey {
  where: string
  file: string
  key: string
}

const NS = /^node-red-contrib-aio-statestore\/([\w-]+):(.+)$/

/** Keys written out whole in an editor file; keys built at run time ('state.' + x) are not seen. */
function usedKeys(): UsedKey[] {
  const used: UsedKey[] = []
  const add = (where: string, ownFile: string, raw: string) => {
    const key = raw.replace(/^\[[a-z]+\]/, '')
    if (key.startsWith('node-red:')) return
    const ns = NS.exec(key)
    used.push(ns ? { where, file: `${ns[1]}.json`, key: ns[2]! } : { where, file: `${ownFile}.json`, key })
  }
  const nodesDir = join(repoRoot, 'nodes')
  for (const name of readdirSync(nodesDir).filter((f) => f.endsWith('.html'))) {
    const html = readFileSync(join(nodesDir, name), 'utf8')
    const own = name.replace(/\.html$/, '')
    for (const m of html.matchAll(/data-i18n="([^"]+)"/g)) add(name, own, m[1]!)
    for (const m of html.matchAll(/\b_\("([^"]+)"\)/g)) add(name, own, m[1]!)
    if (own === 'ss-sidebar') for (const m of html.matchAll(/\bt\('([^']+)'[,)]/g)) add(name, own, `ss-sidebar.${m[1]}`)
  }
  for (const name of readdirSync(join(nodesDir, 'partials'))) {
    for (const m of readFileSync(join(nodesDir, 'partials', name), 'utf8').matchAll(/data-i18n="([^"]+)"/g))
      add(`partials/${name}`, '?', m[1]!)
  }
  const editorJs = readFileSync(join(repoRoot, 'resources', 'editor.js'), 'utf8')
  for (const m of editorJs.matchAll(/\bt\("([^"]+)"\)/g)) add('resources/editor.js', 'ss-config', `common.${m[1]}`)
  return used
}

describe('locales: the editor asks only for keys en-US has', function () {
  it('every key written in nodes/*.html, nodes/partials and resources/editor.js is in the catalogue', function () {
    const used = usedKeys()
    assert.ok(used.length > 100, `found ${used.length} keys: the scan reads the editor files`)
    const missing = used.filter(({ file, key }) => {
      const path = join(LOCALES, ENGLISH, file)
      return !existsSync(path) || !leaves(JSON.parse(readFileSync(path, 'utf8')) as Catalogue).has(key)
    })
    assert.deepEqual(missing, [])
  })
})
