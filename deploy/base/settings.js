// Node-RED settings for the cluster (deploy/base): the state store as a context store, and a login
// for the editor. What differs per site comes from the environment the StatefulSet sets; the two
// secrets come from the Secret node-red-secrets mounted as files, never from the environment, which
// every flow reads (env.get, $env() in JSONata, ${NAME} in a node's property).
'use strict'
const { readFileSync } = require('node:fs')
const { dirname, join } = require('node:path')
const { homedir } = require('node:os')

/**
 * Resolves a module where Node-RED finds its nodes: the user directory (`-u`/`--userDir`, else
 * NODE_RED_USER_DIR, else ~/.node-red; /data in the image), the folders up from Node-RED's own install
 * (the image installs the package beside it), the working directory, and this file's own package
 * when the file lies in it (the repository's deploy/ run by hand, docs/cluster.md).
 */
function resolveModule(request) {
  const argv = process.argv
  const flag = argv.findIndex((a) => a === '-u' || a === '--userDir')
  const userDir = (flag >= 0 ? argv[flag + 1] : argv.find((a) => a.startsWith('--userDir='))?.slice('--userDir='.length)) || process.env.NODE_RED_USER_DIR
  const red = require.main?.filename ? dirname(require.main.filename) : null
  const paths = [userDir, join(homedir(), '.node-red'), '/data', red, process.cwd(), __dirname].filter(Boolean)
  return require.resolve(request, { paths })
}

const contextStore = require(resolveModule('node-red-contrib-aio-statestore/context'))

/** The package this file lies in (the repository's deploy/, run by hand), or null (the image's ConfigMap). */
function ownPackage() {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    try {
      if (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === 'node-red-contrib-aio-statestore') return dir
    } catch {
      // no package.json here: one folder up
    }
  }
  return null
}
const own = ownPackage()

const SECRETS = process.env.NODE_RED_SECRETS_DIR || '/etc/node-red-secrets'

/** A key of the mounted Secret; a missing one stops Node-RED with the file's name. */
function secret(key) {
  const file = join(SECRETS, key)
  try {
    return readFileSync(file, 'utf8').trim()
  } catch (err) {
    throw new Error(`settings.js: cannot read ${file} (${err.code}): create the Secret node-red-secrets as docs/cluster.md shows`, {
      cause: err,
    })
  }
}

// A bcrypt hash alone ($2a$/$2b$/$2y$, cost, 53 characters): a file holding anything else (such as
// the "Password: " prompt `node-red-admin hash-pw` prints) would start an editor nobody can log into.
const BCRYPT = /^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/
const adminPasswordHash = secret('adminPasswordHash')
if (!BCRYPT.test(adminPasswordHash)) {
  throw new Error(`settings.js: ${join(SECRETS, 'adminPasswordHash')} holds no bcrypt hash alone: make it as docs/cluster.md shows`)
}

module.exports = {
  uiPort: Number(process.env.PORT) || 1880,
  flowFile: 'flows.json',
  // Encrypts flows_cred.json; keep it in the Secret node-red-secrets, or the credentials are lost.
  credentialSecret: secret('credentialSecret'),

  // The editor and admin API ask for a login: anyone reaching port 1880 could otherwise deploy flows.
  adminAuth: {
    type: 'credentials',
    users: [{ username: process.env.NODE_RED_ADMIN_USER || 'admin', password: adminPasswordHash, permissions: '*' }],
  },

  // global.get('key', 'statestore') and flow/node context in the state store; an empty config
  // connects with the AIO_* environment (client id <AIO_MQTT_CLIENT_ID>-context).
  contextStorage: {
    default: { module: 'memory' },
    statestore: { module: contextStore, config: {} },
  },

  // Run by hand from the repository: Node-RED loads the nodes from it (in the image they are installed beside Node-RED).
  ...(own ? { nodesDir: [own] } : {}),

  logging: { console: { level: 'info', metrics: false, audit: false } },
  diagnostics: { enabled: false, ui: false },
  telemetry: { enabled: false, updateNotification: false },
  editorTheme: { tours: false },
}
// For the overlays' settings (settings-ha.js): not a setting, so Node-RED never sees it.
Object.defineProperty(module.exports, 'resolveModule', { value: resolveModule, enumerable: false })
