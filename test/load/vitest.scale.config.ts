import { defineConfig } from 'vitest/config';

// `npm run bench:scale`: issue 24's load run (test/load/scale.run.ts), a
// benchmark, not a test: it prints a table and asserts nothing but that it
// ran. Needs PostgreSQL 15, HAProxy and Ceph RGW from Debian (the peer tier's
// packages). A few minutes: 1,000,000 rows are loaded on each side.
export default defineConfig({
  test: {
    include: ['test/load/scale.run.ts'],
    testTimeout: 1_200_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
