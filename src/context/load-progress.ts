/** How often a long load says how far it is. */
export const PROGRESS_MS = 5000

/**
 * Counts keys loaded and, while a load takes longer than PROGRESS_MS, reports how far it is every
 * PROGRESS_MS (a store of 100,000 keys takes seconds; the log should not look stuck meanwhile).
 */
export class LoadProgress {
  private loaded = 0
  private readonly timer: NodeJS.Timeout | null

  constructor(
    private readonly total: number,
    report: (loaded: number, total: number) => void,
    everyMs = PROGRESS_MS,
  ) {
    this.timer = total > 0 ? setInterval(() => report(this.loaded, this.total), everyMs) : null
    this.timer?.unref()
  }

  get figures(): { loaded: number; total: number } {
    return { loaded: this.loaded, total: this.total }
  }

  one(): void {
    this.loaded += 1
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
  }
}
