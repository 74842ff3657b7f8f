// vitest configuration for scripts/e2b-sdk-suite.sh's npm-lifecycle group:
// the checkout's tests as its own "unit" project runs them, with their
// imports of the SDK's source (../src, ../../src) resolved to the npm
// package rung pins ($RUNG_E2B_SUITE_NPM_SDK), so the tests drive the
// published SDK's requests. A plain object: this file imports nothing, so
// it loads from outside the checkout's node_modules.
const sdk = process.env.RUNG_E2B_SUITE_NPM_SDK
if (!sdk) throw new Error('RUNG_E2B_SUITE_NPM_SDK is not set')

export default {
  root: process.cwd(),
  resolve: {
    alias: [{ find: /^(\.\.\/)+src$/, replacement: sdk }],
  },
  test: {
    name: 'unit',
    include: ['tests/**/*.test.ts'],
    isolate: true,
    globals: false,
    environment: 'node',
    deps: { interopDefault: true },
  },
}
