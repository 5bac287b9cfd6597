import { defineConfig } from 'vitest/config';

// The service's suites again, on PostgreSQL: `npm run test:postgres`, part of
// the peer tier (`npm run test:peers` runs it after the Ceph and rclone files;
// README "Peer tests"). A throw-away PostgreSQL 15 cluster from Debian's
// package (postgres-global.ts) serves every file; each service the suites
// start gets a fresh database in it (helpers.ts, startTemp). The embedded
// bucket's own suites run only once, in `npm test`: the bucket keeps its
// tables in the data dir's SQLite file whatever the database.
export default defineConfig({
  test: {
    include: ['test/service/*.test.ts'],
    exclude: [
      'node_modules',
      'dist',
      'test/service/attacks-bucket.test.ts',
      'test/service/bucket-*.test.ts',
      '**/*.peer.test.ts',
    ],
    globalSetup: ['test/service/postgres-global.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
