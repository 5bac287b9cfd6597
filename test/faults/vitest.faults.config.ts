import { defineConfig } from 'vitest/config';

// `npm run test:faults`: the slow tier, every *.slow.test.ts, which the root
// config (vitest.config.ts) leaves out of `npm test`: the slow fault suites of
// issue 7 (SIGKILL storm, outages, queue database, the soak) and the short
// load test of the service (test/load). The quick fault suites run in
// `npm test` and are not run twice.
// One file at a time: the suites start real servers and time faults, and the
// soak and the kill storm measure throughput. Their random decisions come from
// a printed seed; DMS_FAULT_SEED=<seed> replays them (test/support/seeded-random.ts).
export default defineConfig({
  test: {
    // The service's load test too: ten seconds of two cores at full load would
    // slow whatever test runs beside it in `npm test`.
    include: ['main/**/*.slow.test.ts', 'test/**/*.slow.test.ts'],
    exclude: ['node_modules', 'dist'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    maxWorkers: 1,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
