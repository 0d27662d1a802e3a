import { readFileSync } from 'node:fs'
import { Authorizer } from './core/authorization'

/** The authorization rules in a JSON file (`--authorization`); the core only parses their text. */
export function readAuthorizationFile(path: string): Authorizer {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new Error(`cannot read the authorization file ${path}: ${(err as Error).message}`)
  }
  return Authorizer.fromText(text, path)
}
