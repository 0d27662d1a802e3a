// The English message catalogues as shipped: what the editor must show.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../smoke/node-red'

export type Catalogue = Record<string, unknown>

/** nodes/locales/en-US/<name>.json, parsed. */
export function catalogue(name: string): Catalogue {
  return JSON.parse(readFileSync(join(repoRoot, 'nodes', 'locales', 'en-US', `${name}.json`), 'utf8')) as Catalogue
}
