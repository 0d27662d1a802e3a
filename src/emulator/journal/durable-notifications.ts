import type { Logger } from '../../diagnostics/log'
import type { OutgoingNotification } from '../core/registrations'
import type { Journal } from './journal'

/**
 * Key notifications of a change to a persistent key go out once its record is durable, as its
 * answer does: a watcher is never told of a write that a crash then loses. Notifications keep their
 * order, so one behind a write still being synced waits for it too.
 */
export class DurableNotifications {
  private readonly queue: Array<{ seq: number; notifications: OutgoingNotification[] }> = []

  constructor(
    private readonly journal: Journal | null,
    private readonly send: (n: OutgoingNotification) => void,
    private readonly log: Logger,
  ) {}

  /** `seq`: the log's appendedSeq after the change was recorded. */
  publish(notifications: OutgoingNotification[], seq: number): void {
    if (notifications.length === 0) return
    if (this.queue.length === 0 && (!this.journal || seq <= this.journal.durableSeq)) {
      for (const n of notifications) this.send(n)
      return
    }
    this.queue.push({ seq, notifications })
    if (this.queue.length === 1) void this.drain()
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const head = this.queue[0]!
      try {
        await this.journal!.whenDurable(head.seq)
        for (const n of head.notifications) this.send(n)
      } catch (err) {
        // The write is not answered either (service.ts): nobody hears of it.
        this.log(
          'error',
          `${head.notifications.length} key notification(s) not sent: the change could not be made durable ` +
            `(${(err as Error).message})`,
        )
      }
      this.queue.shift()
    }
  }
}
