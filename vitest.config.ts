import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['main/**/*.test.ts', 'test/**/*.test.ts'],
    // The slow ones run in `npm run test:faults` (test/faults/vitest.faults.config.ts).
    exclude: [
      'node_modules',
      'dist',
      'test/faults/soak.test.ts',
      'test/faults/**/*.slow.test.ts',
      'test/load/**',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores here and in CI: integration suites start real servers.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
