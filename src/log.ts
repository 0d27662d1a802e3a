/** The one logger shape of the core: the client, the emulator and the nodes' embedded emulator all take it. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug'
export type Logger = (level: LogLevel, message: string) => void
