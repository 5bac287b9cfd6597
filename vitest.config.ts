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
    // The pinned AWS SDK warns about its 2027 releases on Node 20; noise in test output.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here and in CI: integration suites start real servers.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
