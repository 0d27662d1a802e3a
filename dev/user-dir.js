// The `npm start` user directory holds this working tree as an installed package: a link in
// node_modules and a dependency in package.json, as `npm install <folder>` leaves them.
//
// Node-RED loads the palette from there, and a Function node's Setup → Modules finds the package
// only among the user directory's package.json dependencies, loaded from its node_modules (a
// module not listed there is installed from the npm registry, and a failed install stops every flow).
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const NAME = require('../package.json').name

/** Links `root` into `userDir` as NAME; leaves a real (non-link) install of NAME alone. Returns what it did. */
function linkPackage(userDir, root) {
  const modules = path.join(userDir, 'node_modules')
  const link = path.join(modules, NAME)
  fs.mkdirSync(modules, { recursive: true })
  let linked = 'linked'
  let existing = null
  try {
    existing = fs.lstatSync(link)
  } catch {
    // absent: linked below
  }
  if (existing && !existing.isSymbolicLink()) linked = 'installed'
  else if (existing && fs.realpathSync(link) === fs.realpathSync(root)) linked = 'kept'
  else {
    // Absent, or a link to another working tree (a moved or second checkout): point it here.
    if (existing) fs.unlinkSync(link)
    fs.symlinkSync(root, link, 'junction')
  }
  const packageFile = path.join(userDir, 'package.json')
  let pkg = { name: 'node-red-project', description: 'A Node-RED project', version: '0.0.1', private: true }
  if (fs.existsSync(packageFile)) pkg = JSON.parse(fs.readFileSync(packageFile, 'utf8'))
  pkg.dependencies = pkg.dependencies ?? {}
  if (!pkg.dependencies[NAME]) {
    pkg.dependencies[NAME] = `file:${path.relative(userDir, root) || '.'}`
    fs.writeFileSync(packageFile, JSON.stringify(pkg, null, 4) + '\n')
  }
  return linked
}

module.exports = { linkPackage, PACKAGE_NAME: NAME }
