import type { Writable } from 'node:stream'
import { write } from '../command'

/**
 * A count on one line of a terminal, rewritten as it grows (nothing when stderr is not a terminal), then a summary
 * line.
 */
export class Progress {
  count = 0
  private shown = false

  constructor(
    private readonly out: Writable & { isTTY?: boolean },
    private readonly verb: string,
  ) {}

  async show(): Promise<void> {
    if (!this.out.isTTY) return
    this.shown = true
    await write(this.out, `\r${this.verb} ${this.count} key(s)…`)
  }

  async done(summary: string): Promise<void> {
    await write(this.out, `${this.shown ? '\r\x1b[K' : ''}${this.verb} ${summary}\n`)
  }
}
