import type { IPublishPacket } from 'mqtt'
import type { ConnectionErrorCode } from '../diagnostics/errors'
import type { ConnectionStatus } from './types'

/**
 * What the request layer (pending-requests.ts) needs of a connection, and nothing more: the
 * connection (connection.ts) is one, a test's fake another.
 */
export interface Transport {
  readonly online: boolean
  readonly status: ConnectionStatus
  publish(
    topic: string,
    payload: Buffer,
    properties: PublishProperties,
    onAck: (outcome: { error?: Error; noSubscribers?: boolean }) => void,
  ): number | undefined
  forget(messageId: number): void
}

export type PublishProperties = NonNullable<IPublishPacket['properties']>

/** The code of a ConnectionError for a caller that gave up waiting while the connection was in this state. */
export function downCode(status: ConnectionStatus): ConnectionErrorCode {
  return status.state === 'closed'
    ? 'ConnectionClosed'
    : status.problem === 'authFailed'
      ? 'NotAuthenticated'
      : 'NotConnected'
}
