/**
 * The sidebar counts in each language's own plural forms: every text with a `__count__` is looked up
 * by i18next (the copy Node-RED runs) with `count`, and resolves to the form that language uses for
 * that number, so one hand-over reads "1 hand-over".
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
const repoRoot = join(__dirname, '..', '..')

type Catalogue = { [key: string]: string | Catalogue }
interface I18next {
  createInstance(): I18next
  init(options: object): Promise<unknown>
  t(key: string, options?: object): string
}

const LOCALES = join(repoRoot, 'nodes', 'locales')
const requireFromUtil = createRequire(join(repoRoot, 'node_modules', '@node-red', 'util', 'lib', 'i18n.js'))
const i18next = requireFromUtil('i18next') as I18next
const catalogue = (lang: string) =>
  JSON.parse(readFileSync(join(LOCALES, lang, 'ss-sidebar.json'), 'utf8')) as Catalogue
const html = readFileSync(join(repoRoot, 'nodes', 'ss-sidebar.html'), 'utf8')

function leaves(c: Catalogue, prefix = ''): Map<string, string> {
  const out = new Map<string, string>()
  for (const [k, v] of Object.entries(c)) {
    if (typeof v === 'string') out.set(prefix + k, v)
    else for (const [kk, vv] of leaves(v, `${prefix}${k}.`)) out.set(kk, vv)
  }
  return out
}

/** The English keys whose text counts something (dotted, under ss-sidebar., plural suffix dropped). */
const counted = [
  ...new Set(
    [...leaves(catalogue('en-US'))]
      .filter(([, text]) => text.includes('__count__'))
      .map(([k]) => k.replace(/_(one|few|many)$/, '')),
  ),
]

async function translator(lang: string) {
  const t = i18next.createInstance()
  await t.init({
    lng: lang,
    fallbackLng: 'en-US',
    resources: { [lang]: { sidebar: catalogue(lang) }, 'en-US': { sidebar: catalogue('en-US') } },
    ns: ['sidebar'],
    defaultNS: 'sidebar',
    interpolation: { prefix: '__', suffix: '__', escapeValue: false },
  })
  return (key: string, count: number) => t.t(key, { count })
}

describe('sidebar: counted texts in every language', function () {
  it('counts a lone hand-over, msg and key in the singular in English', async function () {
    const t = await translator('en-US')
    assert.equal(t('ss-sidebar.timeline.handovers', 1), '1 hand-over')
    assert.equal(t('ss-sidebar.timeline.handovers', 20), '20 hand-overs')
    assert.equal(t('ss-sidebar.timeline.waiting', 1), 'at most 1 msg waiting')
    assert.equal(t('ss-sidebar.browser.exported', 1), 'Saved 1 key as a file.')
    assert.equal(t('ss-sidebar.watch.bytes', 2), '2 bytes')
  })

  for (const lang of readdirSync(LOCALES)) {
    it(`${lang}: every counted text resolves to the form ${lang} uses for each number`, async function () {
      const t = await translator(lang)
      const texts = leaves(catalogue(lang))
      assert.deepEqual(
        [...texts.keys()].filter((k) => k.endsWith('_plural')),
        [],
        'no i18next v3 `_plural` key: i18next 21 and later look up `_one`, `_few`, `_many`, `_other`',
      )
      const rules = new Intl.PluralRules(lang)
      for (const key of counted) {
        for (const n of [0, 1, 2, 3, 5, 11, 21, 22, 25, 100, 101]) {
          const form = rules.select(n)
          const expected = (texts.get(`${key}_${form}`) ?? texts.get(key))!.replace('__count__', String(n))
          assert.equal(t(key, n), expected, `${lang} ${key} for ${n} (${form})`)
        }
      }
    })
  }

  it('passes count with every counted text it shows', function () {
    for (const key of counted) {
      const calls = [
        ...html.matchAll(new RegExp(`\\bt\\('${key.replace('ss-sidebar.', '').replace(/\./g, '\\.')}'([^)]*)\\)`, 'g')),
      ]
      assert.ok(calls.length > 0, `nodes/ss-sidebar.html shows ${key}`)
      for (const call of calls) assert.match(call[1]!, /\{\s*count:/, `${key} is given { count }: ${call[0]}`)
    }
  })
})
