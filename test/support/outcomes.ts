/** How a batch of requests ended: results, and failures counted by error name. */
export class Outcomes<T> {
  readonly ok: T[] = []
  readonly failed = new Map<string, number>()
  /** Failures that are not typed errors of this package (a bug). */
  readonly untyped: unknown[] = []
  issued = 0

  track(promise: Promise<T>, onOk?: (value: T) => void): Promise<void> {
    this.issued += 1
    return promise.then(
      (value) => {
        this.ok.push(value)
        onOk?.(value)
      },
      (err: unknown) => {
        const name = err instanceof Error ? err.name : typeof err
        this.failed.set(name, (this.failed.get(name) ?? 0) + 1)
        if (!(err instanceof Error) || !('kind' in err)) this.untyped.push(err)
      },
    )
  }

  get failedCount(): number {
    let n = 0
    for (const c of this.failed.values()) n += c
    return n
  }

  summary(): string {
    return `${this.issued} issued, ${this.ok.length} completed, ${this.failedCount} failed ${JSON.stringify(Object.fromEntries(this.failed))}`
  }
}
