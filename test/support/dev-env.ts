import { readFileSync } from 'node:fs'

/** The AIO_* variables of a dev layout's `.env`, as `set -a; . DIR/.env` exports them. */
export function readDotEnv(file: string): Record<string, string> {
  const vars: Record<string, string> = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(AIO_\w+)=(.*)$/.exec(line)
    if (m) vars[m[1]!] = m[2]!
  }
  return vars
}
