// `npm start -- --dev DIR`: the editor against the AIO SDKs' development layout (docs/cluster.md).
// The embedded broker serves the SDKs' dev ports beside the plain one (8883 TLS + X.509, 8884
// TLS + SAT), DIR/.env is written and becomes this process's environment, and AIO_STATESTORE_URL
// names the TLS + SAT listener: the seeded config nodes, those with a blank broker and the context
// store connect over TLS + SAT with .env's CA and token, as in the cluster.
import { createRequire } from 'node:module'
import { join } from 'node:path'

/**
 * The dev layout asked for on the command line, or null: { tlsListeners, started(emulator) }.
 * `port(name, fallback)` reads a port from the environment: start.mjs's, which refuses a non-port.
 */
export function devLayoutFromArgs(root, argv, port) {
  const i = argv.indexOf('--dev')
  if (i === -1) return null
  const dir = argv[i + 1]
  if (!dir || dir.startsWith('--')) throw new Error('--dev needs a folder: npm start -- --dev .aio-dev')
  const require = createRequire(import.meta.url)
  const { DEV_PORTS, prepareDevLayout, writeDevEnv } = require(join(root, 'dist', 'src', 'emulator', 'dev-layout.js'))
  const layout = prepareDevLayout(dir)
  const listener = (port, authentication) => ({
    port,
    certFile: layout.brokerCertFile,
    keyFile: layout.brokerKeyFile,
    authentication,
  })
  // As MQTT_PORT for the plain one: MQTT_X509_PORT and MQTT_SAT_PORT move the TLS listeners (0 picks a free port).
  return {
    layout,
    tlsListeners: [
      { ...listener(port('MQTT_X509_PORT', DEV_PORTS.x509), { method: 'x509' }), clientCaFile: layout.caFile },
      listener(port('MQTT_SAT_PORT', DEV_PORTS.sat), { method: 'sat', tokenFiles: [{ file: layout.tokenFile }] }),
    ],
    /** Writes DIR/.env for the listening SAT port and exports its lines here. */
    started(emulator) {
      Object.assign(process.env, writeDevEnv(layout, Number(new URL(emulator.tlsUrls[1]).port)))
      return emulator.tlsUrls
    },
  }
}
