/** Why a RESP3 payload could not be decoded. `incomplete` means more bytes could complete it. */
export type RespErrorReason = 'incomplete' | 'malformed' | 'too-deep' | 'trailing-bytes'

/** The only error the decoder throws: what was wrong, and the byte offset where it was found. */
export class RespProtocolError extends Error {
  override readonly name = 'RespProtocolError'
  constructor(
    readonly reason: RespErrorReason,
    readonly offset: number,
    detail: string,
  ) {
    super(`RESP3 ${reason} at offset ${offset}: ${detail}`)
  }
}
