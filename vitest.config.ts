import { defineConfig } from 'vitest/config';

// The test layout: unit tests (no server, no other process) beside their code
// as main/**/*.test.ts; suites that run servers or span processes in test/.
// The slow tier is named by suffix: *.slow.test.ts run in `npm run test:faults`
// (test/faults/vitest.faults.config.ts), *.peer.test.ts (real third-party
// engines) in `npm run test:peers` (test/peers/vitest.peers.config.ts).
export default defineConfig({
  test: {
    include: ['main/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['node_modules', 'dist', '**/*.slow.test.ts', '**/*.peer.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here and in CI: integration suites start real servers.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
