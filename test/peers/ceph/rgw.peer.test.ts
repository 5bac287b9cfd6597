/**
 * The Ceph harness itself (rgw.ts, daemons.ts): a cluster leaves nothing
 * behind when stopped, and one whose test process died is swept by the next.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { alive, sweepStaleClusters } from './daemons.js';
import { startRgw } from './rgw.js';

const daemonPids = (dir: string): number[] =>
  fs
    .readdirSync(path.join(dir, 'pids'))
    .map((f) => Number(fs.readFileSync(path.join(dir, 'pids', f), 'utf8')));

it('stop ends radosgw, the OSD and the monitor, and removes the data', async () => {
  const rgw = await startRgw();
  const pids = daemonPids(rgw.dir);
  expect(pids).toHaveLength(3);
  expect(pids.every(alive)).toBe(true);
  const t0 = Date.now();
  await rgw.stop();
  console.log(`stop: ${Date.now() - t0} ms`);
  expect(pids.filter(alive)).toEqual([]);
  expect(fs.existsSync(rgw.dir)).toBe(false);
  await rgw.stop(); // twice is harmless
});

it('a cluster whose test process died is killed and removed by the next start', async () => {
  const rgw = await startRgw();
  const pids = daemonPids(rgw.dir);
  // As if the process that started it had been killed: its owner is a process that has ended.
  const dead = spawnSync(process.execPath, [
    '-e',
    'process.stdout.write(String(process.pid))',
  ]).stdout.toString();
  fs.writeFileSync(path.join(rgw.dir, 'owner.pid'), dead);
  await sweepStaleClusters();
  expect(pids.filter(alive)).toEqual([]);
  expect(fs.existsSync(rgw.dir)).toBe(false);
  await rgw.stop();
});
