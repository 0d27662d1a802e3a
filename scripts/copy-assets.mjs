// Node-RED loads a node's .html, locales/ and icons/ from beside its .js file, so the build puts
// the editor files next to the compiled nodes in dist/nodes.
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist', 'nodes')

// Form rows every palette node shares (state store, key, fencing token, overrides, name) are written
// once in nodes/partials and placed where an editor file says `<!-- row: NAME [text] -->`; the text
// fills the row's {{properties}} (the msg properties that node lets override its settings).
const ROW = /^ *<!-- row: ([a-z-]+)(?: (.*?))? -->\n/gm
function expandRows(file, html) {
  return html.replace(ROW, (_, name, text = '') => {
    const partial = join(root, 'nodes', 'partials', `${name}.html`)
    if (!existsSync(partial)) throw new Error(`${file}: no form row named ${name} in nodes/partials`)
    return readFileSync(partial, 'utf8').replaceAll('{{properties}}', text)
  })
}

// A node's registration header (category, palette look, defaults) comes from its schema, declared
// once in nodes/config/schemas.ts (compiled before this runs), where the editor file says so.
const { SCHEMAS, registrationHeader } = createRequire(import.meta.url)(join(out, 'config', 'schemas.js'))
const REGISTRATION =
  /^( {2}RED\.nodes\.registerType\("([a-z-]+)", \{\n) {4}\/\/ registration: nodes\/config\/schemas\.ts\n/m
function expandRegistration(file, html) {
  return html.replace(REGISTRATION, (_, line, type) => {
    if (!(type in SCHEMAS)) throw new Error(`${file}: no schema for ${type} in nodes/config/schemas.ts`)
    return line + registrationHeader(type)
  })
}

for (const file of readdirSync(join(root, 'nodes'))) {
  if (file.endsWith('.html'))
    writeFileSync(
      join(out, file),
      expandRegistration(file, expandRows(file, readFileSync(join(root, 'nodes', file), 'utf8'))),
    )
}
for (const dir of ['locales']) {
  if (existsSync(join(root, 'nodes', dir))) cpSync(join(root, 'nodes', dir), join(out, dir), { recursive: true })
}
// The icons ship once, here, where Node-RED looks for them (not the repository's icons/ as well).
cpSync(join(root, 'icons'), join(out, 'icons'), { recursive: true, filter: (src) => !src.endsWith('.keep') })

// The package's bin entries, runnable from dist/ as they are once installed.
for (const cli of [
  join(root, 'dist', 'src', 'emulator', 'cli', 'main.js'),
  join(root, 'dist', 'src', 'cli', 'main.js'),
]) {
  if (existsSync(cli)) chmodSync(cli, 0o755)
}
