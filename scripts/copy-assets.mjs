// Node-RED loads a node's .html, locales/ and icons/ from beside its .js file, so the build puts
// the editor files next to the compiled nodes in dist/nodes.
import { chmodSync, cpSync, existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist', 'nodes')

for (const file of readdirSync(join(root, 'nodes'))) {
  if (file.endsWith('.html')) cpSync(join(root, 'nodes', file), join(out, file))
}
for (const dir of ['locales']) {
  if (existsSync(join(root, 'nodes', dir))) cpSync(join(root, 'nodes', dir), join(out, dir), { recursive: true })
}
cpSync(join(root, 'icons'), join(out, 'icons'), { recursive: true })

const cli = join(root, 'dist', 'src', 'emulator', 'cli.js')
if (existsSync(cli)) chmodSync(cli, 0o755)
