// The config node and the context store share one embedded emulator per process: it lives in the core.
export * from '../../src/emulator/embedded'

/** A broker running in this process, to be reached without loopback TCP (see the config node). */
export { inProcessConnector } from '../../src/emulator'
