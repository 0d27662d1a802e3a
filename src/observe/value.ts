/** How a stored value is shown to a person: JSON, text or hex, cut to a preview. */
export interface ValueView {
  /** Bytes in the whole value. */
  size: number
  kind: 'json' | 'text' | 'binary'
  /** JSON pretty-printed, text as is, binary as hex; at most `limit` characters. */
  preview: string
  truncated: boolean
}

const decoder = new TextDecoder('utf-8', { fatal: true })

function printable(text: string): boolean {
  // Control characters other than tab, newline and carriage return mean binary data.
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(text)
}

export function viewValue(value: Buffer, limit = 1024): ValueView {
  const size = value.length
  let text: string | null
  // Past 64 KiB a preview is all anyone reads; decoding a few bytes more keeps a cut character whole.
  const head = size > 65536 ? value.subarray(0, Math.max(limit * 4, 4096)) : value
  try {
    text = decoder.decode(head)
  } catch {
    text = size > 65536 ? head.toString('utf8') : null
  }
  if (text !== null && printable(text)) {
    if (head === value) {
      const trimmed = text.trim()
      if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
        try {
          const pretty = JSON.stringify(JSON.parse(trimmed), null, 2)
          return cut('json', pretty, size, limit)
        } catch {
          // not JSON after all: shown as text
        }
      }
    }
    return cut('text', text, size, limit, head !== value)
  }
  const hexBytes = Math.min(size, Math.floor(limit / 2))
  return { size, kind: 'binary', preview: value.subarray(0, hexBytes).toString('hex'), truncated: hexBytes < size }
}

function cut(kind: 'json' | 'text', text: string, size: number, limit: number, partial = false): ValueView {
  if (text.length <= limit) return { size, kind, preview: text, truncated: partial }
  return { size, kind, preview: text.slice(0, limit), truncated: true }
}
