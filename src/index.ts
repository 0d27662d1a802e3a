/** node-red-contrib-aio-statestore: the core, usable without Node-RED. */
export * from './errors'
export * from './hlc'
export * as resp from './resp'
export * from './protocol'
export * from './client'
export * from './emulator'
export * from './observe'
