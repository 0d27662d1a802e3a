/** The one logger shape of the core: the client, the emulator and the nodes' embedded emulator all take it. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug'
export type Logger = (level: LogLevel, message: string) => void

/**
 * A URL as a log line, an error, a ready line or the sidebar shows it: without its user info (a
 * broker URL may carry `user:password@`). Text that is no URL is shown as given, except that
 * anything up to an `@` before the host is cut there too.
 */
export function shownUrl(text: string): string {
  try {
    const url = new URL(text)
    if (url.username === '' && url.password === '') return text
    url.username = ''
    url.password = ''
    return url.toString().replace(/\/$/, '')
  } catch {
    return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1')
  }
}
