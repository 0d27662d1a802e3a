import { readFileSync, watch, type FSWatcher } from 'node:fs'
import { basename, dirname } from 'node:path'

export { SAT_AUTH_METHOD } from '../protocol'

/**
 * A Kubernetes service-account token kept in a file that the kubelet rotates. It is read again
 * at every connect, and the directory is watched (Kubernetes swaps a symlink rather than writing
 * the file, so watching the file itself would miss the change) so that a connected client can
 * re-authenticate with the new token before the old one expires.
 */
export class SatToken {
  private watcher: FSWatcher | null = null
  private debounce: NodeJS.Timeout | null = null
  private last: Buffer | null = null

  constructor(readonly file: string) {}

  /** The current token; throws when the file cannot be read or is empty. */
  read(): Buffer {
    const token = readFileSync(this.file)
    const trimmed = Buffer.from(token.toString('utf8').trim(), 'utf8')
    if (trimmed.length === 0) throw new Error(`the service account token file ${this.file} is empty`)
    this.last = trimmed
    return trimmed
  }

  /** The token as last read, or a fresh read when it was never read. */
  current(): Buffer {
    return this.last ?? this.read()
  }

  /** Calls `onChange` with the new token whenever the file's content changes. */
  watch(onChange: (token: Buffer) => void, onError: (err: Error) => void): void {
    if (this.watcher) return
    const name = basename(this.file)
    try {
      this.watcher = watch(dirname(this.file), { persistent: false }, (_event, changed) => {
        // Kubernetes updates `..data` and friends, not the file name; any change in the folder counts.
        if (changed !== null && changed !== name && !String(changed).startsWith('..')) return
        if (this.debounce) clearTimeout(this.debounce)
        this.debounce = setTimeout(() => {
          this.debounce = null
          const before = this.last
          try {
            const token = this.read()
            if (!before || !before.equals(token)) onChange(token)
          } catch (err) {
            onError(err as Error)
          }
        }, 50)
      })
      this.watcher.on('error', (err) => onError(err))
    } catch (err) {
      onError(err as Error)
    }
  }

  close(): void {
    if (this.debounce) clearTimeout(this.debounce)
    this.debounce = null
    this.watcher?.close()
    this.watcher = null
  }
}
