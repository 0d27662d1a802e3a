'use strict'
// The spec list is in the npm test script, so `npx mocha <file>` runs just that file. Specs are TypeScript run through tsx; type checking is `npm run typecheck` (part of `npm run build`).
module.exports = {
  'node-option': ['import=tsx'],
  // Every timeout is stretched by the machine's time scale (test/support/deadline.ts), so 20 s here
  // means 20 s on a quiet machine and more on a busy one.
  require: ['./test/support/mocha-time-scale.ts'],
  timeout: 20000,
  slow: 1000,
  reporter: require.resolve('./test/support/reporter.cjs'),
  'forbid-only': Boolean(process.env.CI),
}
