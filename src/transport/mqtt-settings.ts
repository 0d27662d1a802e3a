import type { IClientOptions } from 'mqtt'

/**
 * mqtt.js's `log` option for our clients (the state store client's and the emulator's): mqtt.js calls
 * its `debug` logger about thirty times per request and answer even with logging off (a call with
 * its arguments and a check each time: 5 % of a requester's CPU, 1.6 % of the emulator's, in
 * profiles). Without DEBUG in the environment nothing would be printed, so it gets a no-op; with
 * DEBUG set it keeps its own, so `DEBUG=mqttjs*` works as usual.
 */
export function mqttLogOption(): Pick<IClientOptions, 'log'> {
  return process.env.DEBUG ? {} : { log: ignoreLog }
}

function ignoreLog(): void {}

/**
 * TCP_NODELAY on a connection's stream: net.Socket and tls.TLSSocket; the ws transport and the in-process stream set or
 * need none.
 */
export function setNoDelay(stream: unknown): void {
  const s = stream as { setNoDelay?: (on: boolean) => unknown } | undefined
  if (typeof s?.setNoDelay === 'function') s.setNoDelay(true)
}
