/**
 * Issue 7: the queue database under stress, the slower part (`npm run
 * test:faults` only): a long write transaction held by another process
 * (longer than the queue's 5 s busy timeout), and the engine on a disk that
 * fills up (a real tiny tmpfs) then gets space again.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueWriteError } from '../../main/core/errors.js';
import { Queue } from '../../main/core/queue/queue.js';
import { runSync } from './cli.js';
import { canMount, fill, tryMount, unmount } from './disk.js';
import {
  expectPlain,
  expectPromiseKept,
  FAST_SETTLE,
  findSecrets,
  KiB,
  makeCard,
  startEngine,
  startRig,
  until,
  type Rig,
} from './rig.js';

let rig: Rig;
const stateDirs: string[] = [];
const mounted: string[] = [];
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-queue-slow-' });
});
afterAll(async () => {
  for (const m of mounted) unmount(m);
  expect(
    findSecrets(
      stateDirs.filter((d) => fs.existsSync(d)),
      rig.secrets,
    ),
  ).toEqual([]);
  await rig?.close();
});

const FOLDER = 'DJI_202301011200_001_Queue';
const smallFiles = (n: number, size: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: `DJI_20230101120000_${String(i + 1).padStart(4, '0')}_W.JPG`,
    size,
  }));

describe('locked queue', () => {
  it('a long write transaction held by another process: the agent waits or retries, says so plainly, finishes, no duplicates', async () => {
    const w = await rig.workspace('long-transaction');
    const root = path.join(rig.dir, 'card-long-tx');
    const files = makeCard(root, FOLDER, smallFiles(40, 8 * KiB));
    const state = path.join(rig.dir, 'state-long-tx');
    stateDirs.push(state);
    fs.mkdirSync(state, { recursive: true });
    // While the queue blocks the agent, a callback's connection may be lost with its answer: that
    // file then waits the settle time before asking (60 s by default, longer than this test).
    fs.writeFileSync(
      path.join(state, 'config.json'),
      JSON.stringify({ ...FAST_SETTLE, concurrency: { files: 1, parts: 1 }, bandwidthLimitKiBps: 96 }),
    );
    const queueFile = path.join(state, 'queue.db');
    const cli = runSync(rig, w, state, [root]);
    await until('the agent at work', () => cli.stdout().includes('"outcome":"uploaded"'), 20_000);
    // Longer than the queue's 5 s busy timeout.
    const holdMs = 7_000;
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D = require(${JSON.stringify(sqlite)}); const db = new D(${JSON.stringify(queueFile)}, { timeout: 10000 });
         db.exec('BEGIN IMMEDIATE'); db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('other', 'x')").run();
         process.stdout.write('held\\n'); setTimeout(() => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); }, ${holdMs});`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let said = '';
    holder.stdout.on('data', (d) => (said += String(d)));
    const holderExit = new Promise((res) => holder.on('exit', res));
    await until('the lock taken', () => said.includes('held'), 10_000);
    const heldAt = Date.now();
    const r = await cli.exit;
    await holderExit;
    expect(said).toContain('released');
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(0);
    expect(r.ms).toBeGreaterThan(Date.now() - heldAt); // it was running across the hold
    const errors = r.stdout
      .split('\n')
      .filter((l) => l.includes('"error"'))
      .map((l) => (JSON.parse(l) as { error: { kind: string; message: string; plain: string } }).error);
    console.log(
      `long transaction: ${r.ms} ms, errors: ${JSON.stringify(errors.map((e) => `${e.kind}: ${e.message}`))}`,
    );
    for (const e of errors) {
      // The queue's own failure says so; while the queue blocked the agent (better-sqlite3 waits
      // synchronously), keep-alive connections may have gone stale: retried like any network hiccup.
      if (e.kind === 'invalid-input') expect(e.plain).toMatch(/queue database/i);
      else expect(['network', 'timeout']).toContain(e.kind);
      expectPlain(e.plain);
    }
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  }, 60_000);
});

describe.skipIf(!canMount)('full disk (tmpfs)', () => {
  it('the engine halts with a plain "disk is full", loses nothing, and continues once space is freed', async () => {
    const w = await rig.workspace('disk-full-engine');
    const root = path.join(rig.dir, 'card-full-engine');
    const files = makeCard(root, FOLDER, smallFiles(300, 2 * KiB));
    const state = path.join(rig.dir, 'state-full-engine');
    expect(tryMount(state, 8 * 1024 * 1024)).toBe(true);
    mounted.push(state);
    stateDirs.push(state);
    const queueFile = path.join(state, 'queue.db');
    const queue = new Queue(queueFile);
    const filler = fill(state, 400 * KiB);
    const run = await startEngine({ queue, api: w.api(), roots: [root] });
    try {
      // "Halted" is a state of its own, with its reason (not a plain "paused").
      await until('the halt', () => run.engine.state === 'halted', 30_000);
      const err = run.engine.error!;
      expect(err).toBeInstanceOf(QueueWriteError);
      expect((err as QueueWriteError).reason).toBe('disk-full');
      expect(err.message).toMatch(/disk .*is full/i);
      expectPlain(err.message);
      expect(run.events.filter((e) => e.outcome === 'failed')).toEqual([]);
      const doneAtHalt = run.events.filter((e) => e.outcome === 'uploaded').length;
      expect(doneAtHalt).toBeLessThan(files.length);
      fs.rmSync(filler);
      run.engine.resume();
      await until('all done after space was freed', () => queue.counts().done.files === files.length, 60_000);
    } finally {
      await run.stop();
      queue.close();
    }
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  }, 90_000);
});
