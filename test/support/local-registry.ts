// An npm registry on loopback that serves the packages already installed in this repository's
// node_modules, so a test can run `npm install` exactly as a user or an image build does, with no
// network: each package's manifest is its installed package.json, its tarball is made from its
// installed folder. A package that is not installed here is a 404, as an unpublished one is.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

interface Installed {
  dir: string
  manifest: Record<string, unknown> & { name: string; version: string }
}

/** Every package folder under a node_modules, nested ones included. */
function installedPackages(nodeModules: string, into: Map<string, Map<string, Installed>>): void {
  if (!existsSync(nodeModules)) return
  for (const entry of readdirSync(nodeModules, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue
    const dirs = entry.name.startsWith('@')
      ? readdirSync(join(nodeModules, entry.name), { withFileTypes: true }).map((e) =>
          join(nodeModules, entry.name, e.name),
        )
      : [join(nodeModules, entry.name)]
    for (const dir of dirs) {
      const file = join(dir, 'package.json')
      if (!existsSync(file)) continue
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as Installed['manifest']
      if (typeof manifest.name !== 'string' || typeof manifest.version !== 'string') continue
      const versions = into.get(manifest.name) ?? new Map<string, Installed>()
      versions.set(manifest.version, { dir, manifest })
      into.set(manifest.name, versions)
      installedPackages(join(dir, 'node_modules'), into)
    }
  }
}

/** The fields of a package.json npm reads from a registry's version document. */
const MANIFEST_FIELDS = [
  'name',
  'version',
  'dependencies',
  'optionalDependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'bundleDependencies',
  'bin',
  'engines',
  'os',
  'cpu',
  'libc',
  'deprecated',
] as const

export interface LocalRegistry {
  readonly url: string
  /** The package names npm asked for, in order. */
  readonly requested: string[]
  close(): Promise<void>
}

export async function startLocalRegistry(nodeModules: string): Promise<LocalRegistry> {
  const packages = new Map<string, Map<string, Installed>>()
  installedPackages(nodeModules, packages)
  const requested: string[] = []
  let base = ''

  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1))
    const tarball = /^(.+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(path)
    if (tarball) {
      const found = packages.get(tarball[1]!)?.get(tarball[2]!)
      if (!found) return void res.writeHead(404).end()
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' })
      // npm's tarball layout: everything under package/, without the installed dependencies.
      const tar = spawn(
        'tar',
        ['-czf', '-', '--exclude=./node_modules', '--transform', 's,^\\.,package,', '-C', found.dir, '.'],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
      tar.stdout.pipe(res)
      return
    }
    requested.push(path)
    const versions = packages.get(path)
    if (!versions) return void res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"Not found"}')
    const doc = {
      name: path,
      'dist-tags': { latest: [...versions.keys()].at(-1) },
      versions: Object.fromEntries(
        [...versions].map(([version, { manifest }]) => [
          version,
          {
            ...Object.fromEntries(
              MANIFEST_FIELDS.filter((f) => manifest[f] !== undefined).map((f) => [f, manifest[f]]),
            ),
            dist: { tarball: `${base}/${path}/-/${path.split('/').at(-1)}-${version}.tgz` },
          },
        ]),
      ),
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(doc))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: `${base}/`,
    requested,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
