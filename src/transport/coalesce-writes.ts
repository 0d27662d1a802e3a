/**
 * Sends what the packets of one read cause (acknowledgements, answers, notifications, the next
 * requests) in one socket write instead of one each.
 *
 * mqtt.js handles the packets of a chunk it read one per `process.nextTick`, and mqtt-packet corks
 * the stream only until the next tick, so every PUBACK and PUBLISH it writes became a `writev` system
 * call of its own: a quarter of the CPU of the emulator and of a client in their profiles at a few
 * thousand messages a second. Here the stream is corked when bytes arrive and uncorked in the same
 * turn of the event loop once those ticks have run (`setImmediate`, no timer): nothing waits for
 * more input, and the more arrives at once (a backlog), the fewer writes it takes to answer it.
 */
export function coalesceWrites(stream: unknown): void {
  const s = stream as
    | {
        on?: (event: 'data', listener: () => void) => unknown
        cork?: () => void
        uncork?: () => void
        destroyed?: boolean
      }
    | undefined
  if (typeof s?.on !== 'function' || typeof s.cork !== 'function' || typeof s.uncork !== 'function') return
  const cork = s.cork.bind(s)
  const uncork = s.uncork.bind(s)
  let corked = false
  const release = () => {
    corked = false
    uncork()
  }
  s.on('data', () => {
    if (corked || s.destroyed) return
    corked = true
    cork()
    setImmediate(release)
  })
}
