/** Why a RESP3 payload could not be decoded. `incomplete` means more bytes could complete it. */
export type RespErrorReason = 'incomplete' | 'malformed' | 'tooDeep' | 'trailingBytes'

const WORDS: Record<RespErrorReason, string> = {
  incomplete: 'incomplete',
  malformed: 'malformed',
  tooDeep: 'nested too deep',
  trailingBytes: 'trailing bytes',
}

/** The only error the decoder throws: what was wrong, and the byte offset where it was found. */
export class RespProtocolError extends Error {
  override readonly name = 'RespProtocolError'
  constructor(
    readonly reason: RespErrorReason,
    readonly offset: number,
    detail: string,
  ) {
    super(`RESP3 ${WORDS[reason]} at offset ${offset}: ${detail}`)
  }
}
