// Node-RED settings for the cluster (deploy/base): the state store as a context store, and a login
// for the editor. Everything that differs per site comes from the environment the StatefulSet sets.
'use strict'

// The package is installed in the image (deploy/image), beside Node-RED, or from the palette into /data.
const contextStore = require(require.resolve('node-red-contrib-aio-statestore/context', { paths: [process.cwd(), '/data'] }))

module.exports = {
  uiPort: Number(process.env.PORT) || 1880,
  flowFile: 'flows.json',
  // Encrypts flows_cred.json; keep it in the Secret node-red-secrets, or the credentials are lost.
  credentialSecret: process.env.NODE_RED_CREDENTIAL_SECRET,

  // The editor and admin API ask for a login: anyone reaching port 1880 could otherwise deploy flows.
  adminAuth: {
    type: 'credentials',
    users: [{ username: process.env.NODE_RED_ADMIN_USER || 'admin', password: process.env.NODE_RED_ADMIN_PASSWORD_HASH, permissions: '*' }],
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
