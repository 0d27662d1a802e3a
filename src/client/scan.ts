import { ArgumentError, NotSupportedError, ServiceError } from '../diagnostics/errors'
import { parseScanResponse, Request, type Bytes, type ScanPage } from '../protocol'
import { requireBytes, requireOptions } from '../checks/arguments'
import { invokeBuilt, type Invoker } from './pending-requests'
import type { RequestOptions } from './types'

/**
 * The keys matching a pattern, a page per `next()`, as the SDKs' design (ADR 34) puts it: each call
 * sends one SCAN with the token of the previous answer, which stays inside; `null` once the store
 * says the scan is complete. A page may be empty while more follow. When `next()` fails, the token
 * is unchanged and `next()` may be called again. Also an async iterable of pages.
 */
export class KeyScan implements AsyncIterable<string[]> {
  private token: Buffer | null = null
  private done = false
  private busy = false

  constructor(
    private readonly invoke: Invoker,
    private readonly pattern: Bytes,
    private readonly options: RequestOptions = {},
  ) {}

  /** Whether the store has said the scan is complete: the next `next()` gives null without a request. */
  get complete(): boolean {
    return this.done
  }

  /** The next page of keys, or null when there are no more. One page at a time: pages depend on each other. */
  async next(): Promise<string[] | null> {
    if (this.done) return null
    if (this.busy)
      throw new ArgumentError(
        'KeyScan.next() was called before the previous call finished; pages are requested one after another',
      )
    this.busy = true
    try {
      const page = await scanPage(this.invoke, this.pattern, this.token, this.options)
      this.token = page.token
      this.done = page.token === null
      return page.keys
    } finally {
      this.busy = false
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string[]> {
    for (let page = await this.next(); page !== null; page = await this.next()) yield page
  }
}

function scanPage(invoke: Invoker, pattern: Bytes, token: Buffer | null, options: RequestOptions): Promise<ScanPage> {
  return invokeBuilt(invoke, () => {
    requireOptions(options)
    const payload = Request.scan(requireBytes(pattern, 'pattern'), token)
    return {
      verb: 'SCAN',
      payload,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      fencingToken: undefined,
      persist: undefined,
      parse: scanResult,
    }
  })
}

function scanResult(payload: Buffer): ScanPage {
  try {
    return parseScanResponse(payload)
  } catch (err) {
    if (err instanceof ServiceError && err.code === 'UnknownCommand')
      throw new NotSupportedError('SCAN', { cause: err })
    throw err
  }
}
