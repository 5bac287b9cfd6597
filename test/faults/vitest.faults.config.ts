import { defineConfig } from 'vitest/config';

// `npm run test:faults`: every fault suite of issue 7, the slow ones included
// (*.slow.test.ts and soak.test.ts, which the root config leaves out of `npm test`).
// One file at a time: the suites start real servers and time faults, and the
// soak and the kill storm measure throughput.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    exclude: ['node_modules', 'dist'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 600_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    maxWorkers: 1,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
