/**
 * Issue 7: the queue database under stress (the quick part; a long write
 * transaction of another process and the engine on a full disk are in
 * queue-db.slow.test.ts). Locked by another agent, on a full disk (a real
 * tiny tmpfs), damaged (truncated, or a page overwritten): a clear error,
 * and never a silently lost queue.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, lastJson, runSync } from './cli.js';
import { canMount, fill, tryMount, unmount } from './disk.js';
import {
  expectPlain,
  expectPromiseKept,
  findSecrets,
  forwardedCallbacks,
  KiB,
  makeCard,
  startRig,
  until,
  type CardFile,
  type Rig,
  type Workspace,
} from './rig.js';
import { bytesFrom, faultSeed, seededRandom } from '../support/seeded-random.js';

/** The garbage written over a page of the queue comes from this seed: whether SQLite notices depends on it. */
const SEED = faultSeed('queue-db');

let rig: Rig;
const stateDirs: string[] = [];
const mounted: string[] = [];
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-queue-' });
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
  it('a second agent on the same state is refused with a clear message; status works alongside; no duplicates', async () => {
    const w = await rig.workspace('second-agent');
    const root = path.join(rig.dir, 'card-second');
    const files = makeCard(root, FOLDER, smallFiles(10, 100 * KiB));
    const state = path.join(rig.dir, 'state-second');
    stateDirs.push(state);
    // The first agent is kept mid-work: its callbacks wait at the proxy until the checks are over.
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let held = 0;
    const hold = rig.service.inject({
      name: 'hold-first-agent',
      match: (r) => r.op === 'upload-callback' && r.path.includes(w.ws),
      fault: { kind: 'pass' },
      hooks: { onArrival: () => (held++, gate) },
      forMs: 30_000,
    });
    const first = runSync(rig, w, state, [root]);
    await until('the first agent at work', () => held > 0, 20_000);
    const second = await runSync(rig, w, state, [root], { killAfterMs: 15_000 }).exit;
    expect(second.code).toBe(2);
    expect(second.ms).toBeLessThan(10_000);
    expect(second.stderr).toContain(
      `Another Drone Media Sync (process ${first.child.pid}) is already syncing with this queue`,
    );
    expectPlain(second.stderr);
    // `status` reads the queue while the agent runs.
    const status = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const c = spawn(process.execPath, [BIN, 'status', '--json', '--state', state], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      c.stdout.on('data', (d) => (out += String(d)));
      c.on('exit', (code) => resolve({ code, out }));
    });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.out).counts.uploaded.files).toBeGreaterThan(0);
    release();
    hold.stop();
    const done = await first.exit;
    expect(done.code, done.stderr).toBe(0);
    await expectPromiseKept({
      rig,
      w,
      files,
      queueFile: path.join(state, 'queue.db'),
      oneCallbackEach: true,
    });
  }, 60_000);
});

describe.skipIf(!canMount)('full disk (tmpfs)', () => {
  it('the CLI: says the disk is full and exits with a summary (no hang, no crash), then a re-run finishes', async () => {
    const w = await rig.workspace('disk-full-cli');
    const root = path.join(rig.dir, 'card-full-cli');
    const files = makeCard(root, FOLDER, smallFiles(300, 2 * KiB));
    const state = path.join(rig.dir, 'state-full-cli');
    expect(tryMount(state, 8 * 1024 * 1024)).toBe(true);
    mounted.push(state);
    stateDirs.push(state);
    // Room for the scan, not for the whole card's progress.
    const filler = fill(state, 400 * KiB);
    const r = await runSync(rig, w, state, [root], { killAfterMs: 30_000 }).exit;
    const said = r.stdout + r.stderr;
    expect(said).toMatch(/disk .*is full/i);
    expect(r.signal, 'the CLI hung and was killed').toBeNull();
    expect(
      r.code,
      `exit code (13 = Node's "unsettled top-level await": the engine never returned)\n${r.stderr.slice(-6000)}`,
    ).toBe(1);
    expect(lastJson(r.stdout)?.['type']).toBe('summary');
    fs.rmSync(filler);
    const again = await runSync(rig, w, state, [root]).exit;
    expect(again.code, again.stderr).toBe(0);
    await expectPromiseKept({
      rig,
      w,
      files,
      queueFile: path.join(state, 'queue.db'),
      oneCallbackEach: true,
    });
  }, 90_000);
});

describe('damaged queue file', () => {
  const damages: Array<{ name: string; damage: (file: string) => void }> = [
    { name: 'truncated to half', damage: (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 2)) },
    { name: 'truncated to a tenth', damage: (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 10)) },
    {
      name: 'a page of the files table overwritten',
      damage: (f) => {
        const db = new Database(f, { readonly: true });
        const pageSize = db.pragma('page_size', { simple: true }) as number;
        const root = (
          db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'files'").get() as { rootpage: number }
        ).rootpage;
        db.close();
        const fd = fs.openSync(f, 'r+');
        fs.writeSync(fd, bytesFrom(seededRandom(SEED), pageSize), 0, pageSize, (root - 1) * pageSize);
        fs.closeSync(fd);
      },
    },
  ];
  // One card synced once; each damage is done to a copy of that healthy state.
  let healthy: { w: Workspace; root: string; files: CardFile[]; state: string };
  beforeAll(async () => {
    const w = await rig.workspace('damaged');
    const root = path.join(rig.dir, 'card-damaged');
    const files = makeCard(root, FOLDER, smallFiles(60, 3 * KiB));
    const state = path.join(rig.dir, 'state-damaged');
    stateDirs.push(state);
    const first = await runSync(rig, w, state, [root]).exit;
    expect(first.code, first.stderr).toBe(0);
    healthy = { w, root, files, state };
  });
  it.each(damages)(
    '$name: kept aside with a notice, rebuilt from a rescan, nothing sent or recorded twice',
    async ({ name, damage }) => {
      const { w, root, files } = healthy;
      const state = path.join(rig.dir, `state-${name.replace(/\W+/g, '-')}`);
      stateDirs.push(state);
      fs.cpSync(healthy.state, state, { recursive: true });
      const queueFile = path.join(state, 'queue.db');
      expect(fs.existsSync(`${queueFile}-wal`)).toBe(false); // closed cleanly: all in queue.db
      damage(queueFile);
      const damaged = fs.readFileSync(queueFile);
      const bSince = rig.bucket.records.length;
      const r = await runSync(rig, w, state, [root]).exit;
      expect(r.stderr, `fault seed ${SEED}: re-run with DMS_FAULT_SEED=${SEED}`).toMatch(
        /queue database was damaged\. It was kept as .*queue\.db\.damaged-/,
      );
      expect(r.code, r.stderr).toBe(0);
      const kept = fs.readdirSync(state).filter((f) => f.startsWith('queue.db.damaged-'));
      expect(kept).toHaveLength(1);
      expect(
        fs.readFileSync(path.join(state, kept[0]!)).equals(damaged),
        'the damaged queue is kept as it was',
      ).toBe(true);
      const summary = lastJson(r.stdout)!;
      expect(summary).toMatchObject({
        type: 'summary',
        fast_uploaded: files.length,
        uploaded: 0,
        bytes_sent: 0,
        pending: 0,
        failed: 0,
      });
      // No card file is sent again (the card's manifest is: the rebuilt queue is a new state of the card).
      const cardFiles = (x: { key?: string }) => !(x.key ?? '').includes('/manifests/');
      expect(
        rig.bucket.records.filter(
          (x) => x.id > bSince && (x.op === 'PutObject' || x.op === 'UploadPart') && cardFiles(x),
        ),
      ).toEqual([]);
      await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
      expect(forwardedCallbacks(rig.service).size).toBeGreaterThan(0);
    },
    60_000,
  );
});
