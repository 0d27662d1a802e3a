export interface Deadline {
  deadline: number
  id: string
}

/** A binary min-heap of deadlines: the earliest is always at hand, insertion is O(log n). */
export class ExpiryHeap {
  private items: Deadline[] = []

  get size(): number {
    return this.items.length
  }

  peek(): Deadline | undefined {
    return this.items[0]
  }

  push(deadline: number, id: string): void {
    const items = this.items
    items.push({ deadline, id })
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent]!.deadline <= items[i]!.deadline) break
      swap(items, i, parent)
      i = parent
    }
  }

  pop(): Deadline | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (items.length > 0 && last) {
      items[0] = last
      this.siftDown(0)
    }
    return top
  }

  /** Replaces the contents in O(n). */
  rebuild(entries: Iterable<Deadline>): void {
    this.items = [...entries]
    for (let i = (this.items.length >> 1) - 1; i >= 0; i--) this.siftDown(i)
  }

  private siftDown(i: number): void {
    const items = this.items
    const n = items.length
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let min = i
      if (l < n && items[l]!.deadline < items[min]!.deadline) min = l
      if (r < n && items[r]!.deadline < items[min]!.deadline) min = r
      if (min === i) return
      swap(items, i, min)
      i = min
    }
  }
}

function swap(items: Deadline[], a: number, b: number): void {
  const t = items[a]!
  items[a] = items[b]!
  items[b] = t
}
