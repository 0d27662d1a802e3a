// The client pool and its helpers live in test/support/clients.ts, shared by every suite.
export * from '../../support/clients'
