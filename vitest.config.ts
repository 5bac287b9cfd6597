import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['main/**/*.test.ts', 'test/**/*.test.ts'],
    // The slow ones run in `npm run test:faults` (test/faults/vitest.faults.config.ts),
    // those against real third-party engines in `npm run test:peers` (test/peers/vitest.peers.config.ts).
    exclude: [
      'node_modules',
      'dist',
      'test/faults/soak.test.ts',
      'test/faults/**/*.slow.test.ts',
      'test/load/**',
      '**/*.peer.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here and in CI: integration suites start real servers.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
