/**
 * Programs the tests build from the Go module proxy (the interop lane's, the cluster's tools), built
 * into a cache outside the clone so that a second run on the same machine is warm; a cold one builds
 * them from the versions their go.mod and go.sum pin (-mod=readonly: nothing is resolved afresh).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

/** INTEROP_CACHE overrides it. */
export const BUILD_CACHE = process.env.INTEROP_CACHE ?? join(homedir(), '.cache', 'aio-statestore-interop')

/** Whether `go` is on the PATH. */
export function haveGo(): boolean {
  const run = spawnSync('go', ['version'])
  return !run.error && run.status === 0
}

/**
 * Builds `pkg` in the module at `moduleDir` to `out`, unless `out` is there already (name it by
 * the pinned version, so a new version builds anew). Written beside and renamed, so two runs that
 * build at once each see a whole binary.
 */
export function goBuild(moduleDir: string, pkg: string, out: string): string {
  if (existsSync(out)) return out
  if (!haveGo()) throw new Error(`Go is needed to build ${pkg} (go is not on the PATH)`)
  mkdirSync(dirname(out), { recursive: true })
  const partial = `${out}.${process.pid}.partial`
  const run = spawnSync('go', ['build', '-mod=readonly', '-trimpath', '-o', partial, pkg], {
    cwd: moduleDir,
    env: { ...process.env, GOFLAGS: '-mod=readonly', GOCACHE: process.env.GOCACHE ?? join(BUILD_CACHE, 'go-build') },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  if (run.status !== 0) throw new Error(`go build ${pkg} failed in ${moduleDir}:\n${run.stdout}\n${run.stderr}`)
  renameSync(partial, out)
  return out
}
