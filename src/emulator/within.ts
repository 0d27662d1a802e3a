/** Waits for the promise, or for the time to pass, whichever comes first; leaves no timer behind. */
export async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      promise.then(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
    ])
  } finally {
    clearTimeout(timer)
  }
}
