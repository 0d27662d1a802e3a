// The config node and the context store share one embedded emulator per process: it lives in the core.
export {
  acquireEmbedded,
  embeddedEmulator,
  inProcessConnector,
  releaseEmbedded,
  stopEmbedded,
} from '../../src/emulator/embedded'
