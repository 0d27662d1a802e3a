'use strict'
// The spec list is in the npm test script, so `npx mocha <file>` runs just that file. Specs are TypeScript run through tsx; type checking is `npm run typecheck` (part of `npm run build`).
module.exports = {
  'node-option': ['import=tsx'],
  timeout: 20000,
  slow: 1000,
  reporter: require.resolve('./test/support/reporter.cjs'),
  'forbid-only': Boolean(process.env.CI),
}
