'use strict'
// Specs are TypeScript run through tsx; type checking is `npm run typecheck` (part of `npm run build`).
module.exports = {
  spec: ['test/**/*.test.ts'],
  'node-option': ['import=tsx'],
  timeout: 20000,
  slow: 1000,
  reporter: require.resolve('./test/support/reporter.cjs'),
  'forbid-only': Boolean(process.env.CI),
}
