// The message catalogues as shipped: what the editor must show (in English unless a test asks for
// another of the languages in nodes/locales).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../smoke/node-red'

export type Catalogue = Record<string, unknown>

/** nodes/locales/<lang>/<name>.json, parsed. */
export function catalogue(name: string, lang = 'en-US'): Catalogue {
  return JSON.parse(readFileSync(join(repoRoot, 'nodes', 'locales', lang, `${name}.json`), 'utf8')) as Catalogue
}
