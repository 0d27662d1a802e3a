/** How many characters of a key a log line shows before it is cut. */
export const SHOWN_KEY_CHARS = 80

/**
 * A key as a log line names it: quoted, as UTF-8 with control characters escaped (no key can start
 * a log line of its own), cut after SHOWN_KEY_CHARS characters with its full size in bytes.
 */
export function shownKey(key: Buffer): string {
  const text = key.toString('utf8')
  const chars = [...text]
  if (chars.length <= SHOWN_KEY_CHARS) return JSON.stringify(text)
  return `${JSON.stringify(chars.slice(0, SHOWN_KEY_CHARS).join(''))}… (${key.length} bytes)`
}
