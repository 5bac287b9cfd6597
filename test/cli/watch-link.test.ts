/**
 * Issue 31, the link wired into the headless agent: the real CLI (`watch`,
 * `link` from dist/) against the real reference service on loopback, the
 * real queue read from its SQLite file. This laptop's network (its default
 * route, as `link status` names it) pinned metered: only the first lane
 * (flight logs) goes, the videos wait without a byte sent; the crew's
 * `link answer yes` from another terminal lets them go, with no restart.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, runCli } from '../support/cli.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { makeCard, MiB, until } from '../faults/rig.js';
import { queueFiles } from '../support/queue-rows.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-watch-link-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const rows = queueFiles;

it('watch on a network pinned metered sends the first lane only; "link answer yes" lets the rest go', async () => {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home);
  const state = path.join(dir, 'state');
  const card = path.join(dir, 'CARD');
  const folder = 'DJI_202301011200_001_Survey';
  makeCard(card, folder, [
    { name: 'DJI_20230101120000_0001_W.MP4', size: 3 * MiB },
    { name: 'DJI_20230101120100_0002_W.MP4', size: 3 * MiB },
  ]);
  const srt = path.join(card, 'DCIM', folder, 'DJI_20230101120000_0001_W.SRT');
  fs.copyFileSync(path.join(FIXTURES, 'SRT', 'p4_rtk.SRT'), srt);
  const old = Date.now() / 1000 - 3600;
  fs.utimesSync(srt, old, old);

  const pinned = await runCli(['link', 'pin', 'metered', '--state', state], { home });
  expect(pinned.code, pinned.out + pinned.err).toBe(0);

  const child = spawn(
    process.execPath,
    [BIN, 'watch', card, '--state', state, '--server', svc.baseUrl, '--workspace', svc.workspaceId, '--json'],
    {
      env: { ...process.env, HOME: home, DMS_TOKEN: svc.token, DMS_STATE_DIR: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (out += String(d)));
  const exited = new Promise((resolve) => child.on('close', resolve));
  try {
    const of = (ext: string) => rows(state).filter((r) => r.rel_path.endsWith(ext));
    await until('the flight log in the workspace', () => of('.SRT')[0]?.state === 'done', 60_000, 200);
    // The engine asks the gate at least once a second: three seconds later the videos still wait.
    await new Promise((r) => setTimeout(r, 3_000));
    const videos = of('.MP4');
    expect(videos).toHaveLength(2);
    expect(
      videos.filter((v) => v.state === 'done'),
      out,
    ).toEqual([]);
    expect(videos.reduce((n, v) => n + v.bytes_sent, 0)).toBe(0);

    const yes = await runCli(['link', 'answer', 'yes', '--state', state], { home });
    expect(yes.code, yes.out + yes.err).toBe(0);
    await until(
      'the videos in the workspace',
      () => of('.MP4').every((v) => v.state === 'done'),
      60_000,
      200,
    );
  } finally {
    child.kill('SIGINT');
    await exited;
  }
}, 150_000);
