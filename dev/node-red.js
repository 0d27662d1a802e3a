// A Node-RED runtime from its own CLI (red.js) in a child process: the throwaway settings, the
// start, the wait until it is up and the stop, shared by the tests (TypeScript, through
// dev/node-red.d.ts) and the benchmarks (plain ES modules), so neither keeps a copy.
'use strict'
const { spawn } = require('node:child_process')
const { existsSync, writeFileSync } = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')

/** red.js of Node-RED 5 and of Node-RED 4 (the node-red-v4 devDependency). */
const RED_JS = {
  5: path.join(root, 'node_modules', 'node-red', 'red.js'),
  4: path.join(root, 'node_modules', 'node-red-v4', 'red.js'),
}

/** A Node.js that can run Node-RED 5 (>= 22.9): this one, or the `node` devDependency. */
function nodeBinary() {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
  if (major > 22 || (major === 22 && minor >= 9)) return process.execPath
  const local = path.join(root, 'node_modules', '.bin', 'node')
  if (existsSync(local)) return local
  throw new Error(`Node-RED 5 needs Node.js >= 22.9; this is ${process.version} and node_modules/.bin/node is missing`)
}

/** Loads this package from the working tree (as npm start does), and nothing else from node_modules into the palette. */
const FROM_WORKING_TREE = {
  nodesDir: [root],
  externalModules: { palette: { allowList: ['node-red-contrib-aio-statestore'] } },
}

/** Settings for a throwaway runtime: loopback only, nothing phones home, no first-run prompts; `more` adds or replaces top-level properties. */
function runtimeSettings(more = {}) {
  return {
    uiHost: '127.0.0.1',
    flowFile: 'flows.json',
    credentialSecret: 'throwaway-runtime',
    telemetry: { enabled: false, updateNotification: false },
    diagnostics: { enabled: false, ui: false },
    editorTheme: { tours: false, palette: { catalogues: [] } },
    logging: { console: { level: 'info', metrics: false, audit: false } },
    ...more,
  }
}

/** Writes settings as a module; `moreSource`: further properties as JavaScript source, for what JSON can't say (a `require`). */
function writeSettings(file, settings, moreSource = '') {
  const json = JSON.stringify(settings, null, 2)
  writeFileSync(file, `module.exports = ${moreSource ? `${json.slice(0, -2)},\n${moreSource}}` : json}\n`)
}

/**
 * Starts red.js and resolves once `ready(url)` answers true (asked every 100 ms; a throw counts as
 * not yet). Rejects, with the runtime's output, when it exits first or is not ready in timeoutMs;
 * the child is killed then, so a failed start leaves nothing running.
 */
async function startNodeRed({
  redJs = RED_JS[5],
  userDir,
  port,
  settingsFile,
  env = process.env,
  ready,
  timeoutMs = 30000,
  onOutput,
}) {
  // Node-RED 4 runs on this Node.js (CI's Node.js 20 run tests it there); 5 needs 22.9.
  const node = redJs === RED_JS[4] ? process.execPath : nodeBinary()
  const child = spawn(node, [redJs, '--userDir', userDir, '--port', String(port), '--settings', settingsFile], {
    cwd: userDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const runtime = new NodeRedChild(child, `http://127.0.0.1:${port}`)
  const output = (d) => {
    runtime.log += d
    onOutput?.(String(d))
  }
  child.stdout.on('data', output)
  child.stderr.on('data', output)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Node-RED exited (${child.exitCode ?? child.signalCode}) before it was ready\n${runtime.log}`)
    }
    let up = false
    try {
      up = await ready(runtime.url, runtime.log)
    } catch {
      // not listening yet
    }
    if (up) return runtime
    if (Date.now() > deadline) {
      await runtime.kill()
      throw new Error(`Node-RED was not ready within ${timeoutMs} ms\n${runtime.log}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

class NodeRedChild {
  constructor(child, url) {
    this.child = child
    this.url = url
    this.pid = child.pid
    this.log = ''
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()))
  }

  get running() {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  /** SIGTERM, so the flows close (leases are released); SIGKILL if it has not exited after 10 s. */
  async stop() {
    if (!this.running) return
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 10000)
    this.child.kill('SIGTERM')
    await this.exited
    clearTimeout(killer)
  }

  /** `kill -9`: no flow is closed and no lease released, as when the machine dies. */
  async kill() {
    if (!this.running) return
    this.child.kill('SIGKILL')
    await this.exited
  }
}

module.exports = { RED_JS, nodeBinary, FROM_WORKING_TREE, runtimeSettings, writeSettings, startNodeRed }
