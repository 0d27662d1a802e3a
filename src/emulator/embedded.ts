import type { Logger } from '../diagnostics/log'
import { wholeNumber } from '../checks/whole-number'
import { startEmulator, type Emulator } from './index'

/** A broker running in this process, to be reached without loopback TCP (the config node, the context store). */
export { inProcessConnector } from './broker/broker'

/**
 * The emulator the "embedded emulator" option runs inside the Node-RED process (the config node
 * and the context store both use it): one per process,
 * shared by every config node that asks for it. It outlives its last user by a short grace period so
 * that a full deploy (close everything, start everything) keeps the same store and its data.
 */
const GRACE_MS = 3000

interface Shared {
  emulator: Promise<Emulator>
  refs: number
  timer?: NodeJS.Timeout
}

let shared: Shared | null = null

/**
 * The TCP port asked for in AIO_STATESTORE_EMBEDDED_PORT (on 127.0.0.1, for tools in other
 * processes; 0 for any free one), or null for none.
 */
function embeddedPort(): number | null {
  const text = process.env.AIO_STATESTORE_EMBEDDED_PORT?.trim()
  if (!text) return null
  const port = wholeNumber(text)
  if (port === undefined || port > 65535)
    throw new Error(`AIO_STATESTORE_EMBEDDED_PORT ${JSON.stringify(text)} is not a port number`)
  return port
}

export async function acquireEmbedded(logger: Logger): Promise<Emulator> {
  if (!shared) {
    const port = embeddedPort()
    // Only this process reaches it, unless a port is asked for: any local user could otherwise SCAN, SET and SUBSCRIBE
    // #.
    const reach = port === null ? { inProcessOnly: true } : { listen: { host: '127.0.0.1', port } }
    shared = { emulator: startEmulator({ ...reach, logger, logLevel: 'warn', admin: true }), refs: 0 }
  }
  const mine = shared
  mine.refs += 1
  clearTimeout(mine.timer)
  try {
    return await mine.emulator
  } catch (err) {
    mine.refs -= 1
    if (shared === mine) shared = null
    throw err
  }
}

export function releaseEmbedded(): void {
  const mine = shared
  if (!mine) return
  mine.refs -= 1
  if (mine.refs > 0) return
  mine.timer = setTimeout(() => {
    if (shared === mine && mine.refs === 0) void stopEmbedded()
  }, GRACE_MS)
  mine.timer.unref()
}

/** Stops the shared emulator now, whoever still uses it (tests, process shutdown). */
export async function stopEmbedded(): Promise<void> {
  const mine = shared
  if (!mine) return
  shared = null
  clearTimeout(mine.timer)
  try {
    await (await mine.emulator).stop()
  } catch {
    // it never started, or is already stopped: nothing left to release
  }
}

/** The running embedded emulator, if any (for tests and diagnostics). */
export function embeddedEmulator(): Promise<Emulator> | null {
  return shared?.emulator ?? null
}
