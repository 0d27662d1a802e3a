// Node-RED settings for `npm start` (scripts/start.mjs), also usable on their own:
//   npx node-red --settings dev/settings.js
// The package is loaded from this working tree, linked into the user directory as an installed
// package (dev/user-dir.js), so a Function node's Setup → Modules finds it too. User data stays in
// the git-ignored .node-red/ folder, and nothing phones home: this is a local sandbox, not a deployment.
'use strict'
const path = require('node:path')
const { linkPackage } = require('./user-dir.js')

const root = path.join(__dirname, '..')
const userDir = process.env.NODE_RED_USER_DIR
  ? path.resolve(process.env.NODE_RED_USER_DIR)
  : path.join(root, '.node-red')
linkPackage(userDir, root)

function port(value, fallback) {
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`not a TCP port: ${value}`)
  return n
}

module.exports = {
  uiHost: '127.0.0.1',
  uiPort: port(process.env.PORT, 1880),
  httpAdminRoot: '/',
  httpNodeRoot: '/',

  userDir,
  // Relative to userDir. Deploying rewrites this file, so it must never be a tracked example.
  flowFile: 'flows.json',
  flowFilePretty: true,
  // A fixed key, so the credentials file stays readable across restarts without a generated
  // secret in .config.runtime.json. Fine for a local sandbox; never reuse it in production.
  credentialSecret: 'aio-statestore-dev',

  // No nodesDir: the link in the user directory's node_modules loads the package (nodes, icons,
  // locales, examples), straight from dist/; a nodesDir entry too would load it twice.
  // Node-RED also loads every node module it finds in the repository's node_modules; the benchmarks
  // install node-red-contrib-redis there. Only this package (and the core nodes) belong in the palette.
  externalModules: { palette: { allowList: ['node-red-contrib-aio-statestore'] } },

  // Context in the state store (README, "Context store"): `global.get('counter', 'statestore')`.
  // The default store stays in memory. npm start sets AIO_STATESTORE_URL to its broker with the
  // emulator attached; on its own (npx node-red --settings dev/settings.js) the store runs the
  // emulator embedded in Node-RED instead. Read when Node-RED opens its stores, hence the getters.
  contextStorage: {
    default: { module: 'memory' },
    statestore: {
      module: require(path.join(root, 'dist', 'src', 'context')),
      config: {
        get embedded() {
          return !process.env.AIO_STATESTORE_URL
        },
        get broker() {
          return process.env.AIO_STATESTORE_URL
        },
        prefix: 'examples/context/',
      },
    },
  },

  telemetry: { enabled: false, updateNotification: false },
  diagnostics: { enabled: false, ui: false },
  editorTheme: {
    tours: false,
    // The palette manager fetches the flow library's catalogue from catalogue.nodered.org as soon
    // as the editor opens. Without catalogues the Install tab is empty; installing by name
    // (npm install in the user dir) still works.
    palette: { catalogues: [] },
  },

  logging: {
    console: {
      level: process.env.NODE_RED_LOG_LEVEL || 'info',
      metrics: false,
      audit: false,
    },
  },
}
