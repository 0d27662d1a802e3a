// Node-RED settings for the cluster (deploy/base): the state store as a context store, and a login
// for the editor. What differs per site comes from the environment the StatefulSet sets; the two
// secrets come from the Secret node-red-secrets mounted as files, never from the environment, which
// every flow reads (env.get, $env() in JSONata, ${NAME} in a node's property).
'use strict'
const { readFileSync } = require('node:fs')
const { join } = require('node:path')

// The package is installed in the image (deploy/image), beside Node-RED, or from the palette into /data.
const contextStore = require(require.resolve('node-red-contrib-aio-statestore/context', { paths: [process.cwd(), '/data'] }))

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

  logging: { console: { level: 'info', metrics: false, audit: false } },
  diagnostics: { enabled: false, ui: false },
  telemetry: { enabled: false, updateNotification: false },
  editorTheme: { tours: false },
}
