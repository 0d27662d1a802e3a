// Free ports and waiting for a server to listen: shared by the tests (TypeScript, through
// dev/ports.d.ts) and the benchmarks (plain ES modules), so neither keeps a copy.
'use strict'
const { createServer, connect } = require('node:net')

/** A port nobody is listening on right now (on 127.0.0.1). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** Resolves once something accepts connections on 127.0.0.1:port; fails after timeoutMs naming `what` and adding `detail()` (a log). */
async function waitForPort(port, timeoutMs, what = 'the server', detail = () => '') {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ok = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > deadline) {
      const more = detail()
      throw new Error(`${what}: nothing listening on 127.0.0.1:${port} after ${timeoutMs} ms${more ? `\n${more}` : ''}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}

module.exports = { freePort, waitForPort }
