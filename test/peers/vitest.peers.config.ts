import { defineConfig } from 'vitest/config';

// `npm run test:peers`: tests against real third-party engines installed from
// Debian (Ceph's RADOS Gateway, rclone), `test/**/*.peer.test.ts`. The root
// config (vitest.config.ts) leaves them out of `npm test`; `.ci/run` installs
// the packages and runs this after it. One file at a time: each file starts
// its own cluster (memstore keeps objects in RAM) and uploads tens of MiB.
// Forks, not threads: a cluster's daemons are children of the test process
// and are killed when it exits (see test/peers/ceph/daemons.ts).
export default defineConfig({
  test: {
    include: ['test/**/*.peer.test.ts'],
    exclude: ['node_modules', 'dist'],
    pool: 'forks',
    testTimeout: 180_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    maxWorkers: 1,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
