import { spawnSync } from 'node:child_process'
import { chmodSync } from 'node:fs'
import { join } from 'node:path'

function run(dir: string, command: string, args: string[]): void {
  const r = spawnSync(command, args, { cwd: dir, encoding: 'utf8' })
  if (r.error || r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${r.error?.message ?? r.stderr}`)
}

/** A mosquitto password file made with mosquitto_passwd, as an administrator would. */
export function passwordFile(dir: string, users: Record<string, string>): string {
  const file = join(dir, 'passwd')
  let first = true
  for (const [user, password] of Object.entries(users)) {
    run(dir, 'mosquitto_passwd', ['-b', ...(first ? ['-c'] : []), file, user, password])
    first = false
  }
  // mosquitto started as root drops to its own user, which must be able to read it.
  chmodSync(dir, 0o755)
  chmodSync(file, 0o644)
  return file
}

/** A Node-RED core node module, for node-red-node-test-helper (which preloads only catch, status and complete). */
export function coreNode(path: string): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(require.resolve(`@node-red/nodes/core/${path}`, { paths: [require.resolve('node-red')] }))
}
