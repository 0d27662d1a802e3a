import type { ConnectionStatus, StateStoreClient } from '../client'

/** Socket errors that another try within a command's few seconds would only repeat. */
const FINAL_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * Connected, or the first refusal that retrying will not cure: a one-shot command reports a
 * refused port, an unknown host, refused credentials or a port that is no MQTT (or TLS) one at
 * once, with its reason, instead of after its whole timeout. Anything else (a silent broker) waits
 * up to `timeoutMs`, as `client.ready` does.
 */
export function firstConnect(client: StateStoreClient, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onStatus = (status: ConnectionStatus) => {
      if (status.state !== 'disconnected' || !final(status)) return
      client.off('status', onStatus)
      reject(new Error(status.reason ?? 'the connection closed'))
    }
    client.on('status', onStatus)
    client.ready({ timeoutMs, ...(signal ? { signal } : {}) }).then(
      () => {
        client.off('status', onStatus)
        resolve()
      },
      (err: unknown) => {
        client.off('status', onStatus)
        reject(err)
      },
    )
    onStatus(client.status)
  })
}

function final(status: ConnectionStatus): boolean {
  if (
    status.problem === 'authFailed' ||
    status.problem === 'notMqtt' ||
    status.problem === 'tlsExpected' ||
    status.problem === 'tlsUnexpected'
  )
    return true
  const code = (status.error as { code?: unknown } | undefined)?.code
  return typeof code === 'string' && FINAL_CODES.has(code)
}
