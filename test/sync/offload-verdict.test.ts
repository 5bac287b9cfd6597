/**
 * The "safe to format" verdict read from a real queue while a card is not at
 * rest: a file still on its way, a failed file, a pulled card, and a switch
 * to another target. The engine and the reference service run in-process.
 */
import { syncLanes } from '../../main/core/sync/peers.js';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { cardOffload } from '../../main/core/offload/card.js';
import { Queue } from '../../main/core/queue/queue.js';
import { serverTarget } from '../../main/core/session/target.js';
import { folderSource } from '../../main/core/sources/source.js';
import { verifySource } from '../../main/core/offload/verify.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { startSampleBucket, startSampleServer } from '../support/sample-server.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { buildRtkCard } from '../support/rtk-card.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-verdict-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const api = (s: RunningService) =>
  new ApiClient({ baseUrl: s.baseUrl, workspaceId: s.workspaceId, token: s.token });

function setup(name: string, s: RunningService = svc, exposures = 6) {
  const c = buildRtkCard({
    root: path.join(dir, name),
    mission: 'Quarry',
    exposures,
    missing: [],
    float: [],
  });
  const queue = new Queue(path.join(dir, `state-${name}`, 'queue.db'));
  const engine = syncLanes({ queue, api: api(s), config: parseConfig({ callbackSettleSeconds: 1 }) }).engine;
  const source = folderSource(c.root);
  const verdict = () => cardOffload(queue, { sourceId: source.sourceId, label: name }).verdict;
  return { c, queue, engine, source, verdict };
}

it('not while a file is still on its way; safe once all are done and checked', async () => {
  const { queue, engine, source, verdict } = setup('pending');
  await engine.scan(source);
  const pending = verdict();
  expect(pending.safe).toBe(false);
  expect(pending.reasons[0]).toMatch(/^10 files still on the way .*wait until they are done/);
  await engine.run({ mode: 'until-idle' });
  await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
  expect(verdict()).toMatchObject({ safe: true, reasons: [] });
  // Checked a moment ago: the next look reads none of the card's rows (issue 33: before, all 10
  // were read and parsed, then left by a filter), and the verdict is unchanged.
  const ids = vi.spyOn(queue, 'idsOf');
  const rows = vi.spyOn(queue, 'rowsOf');
  const bucketStat = vi.spyOn(engine.bucket, 'stat');
  expect(await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 60_000 })).toBe(
    0,
  );
  expect(ids.mock.results.map((r) => (r.value as unknown[]).length)).toEqual([0]);
  expect(rows).not.toHaveBeenCalled();
  expect(bucketStat).not.toHaveBeenCalled();
  bucketStat.mockRestore();
  expect(verdict()).toMatchObject({ safe: true, reasons: [] });
  // Due again (0 = every time): every file is read and looked at.
  expect(await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 })).toBe(10);
  // A page of rows at a time, never the whole card parsed at once (a 10,000-file card's rows were
  // about 50 MiB of the agent's peak): 10 rows in pages of 3, each file checked once.
  rows.mockClear();
  expect(
    await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0, pageRows: 3 }),
  ).toBe(10);
  expect(rows.mock.calls.map(([page]) => page.length)).toEqual([3, 3, 3, 1]);
  expect(rows.mock.results.flatMap((r) => (r.value as Array<{ id: number }>).map((x) => x.id))).toEqual(
    [...new Set(rows.mock.results.flatMap((r) => (r.value as Array<{ id: number }>).map((x) => x.id)))].sort(
      (a, b) => a - b,
    ),
  );
  ids.mockRestore();
  rows.mockRestore();
  engine.close();
  queue.close();
});

it('a card read again unchanged: its flights as kept, no file info read; a change makes them anew', async () => {
  const { queue, engine, source } = setup('again');
  await engine.scan(source);
  await engine.run({ mode: 'until-idle' });
  await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
  const card = { sourceId: source.sourceId, label: 'again' };
  const first = cardOffload(queue, card);
  expect(first.flights).toHaveLength(1);
  expect(first.flights[0]!.photos).toBe(6);
  const firstFiles = first.files;
  expect(firstFiles.filter((f) => f.position !== null)).toHaveLength(6);
  // Issue 33: re-inserted unchanged, the verdict reads no file's info (a 10,000-file card's
  // parse and check of every info was most of its 1.4 s) and says the same. The info, when
  // needed, is read by its own query (queue.infosOf), never with the whole rows (queue.list).
  const list = vi.spyOn(queue, 'list');
  const infos = vi.spyOn(queue, 'infosOf');
  const second = cardOffload(queue, card);
  expect(infos).not.toHaveBeenCalled();
  expect(list).not.toHaveBeenCalled();
  expect(second.flights).toEqual(first.flights);
  expect(second.verdict).toEqual(first.verdict);
  expect(second.message).toBe(first.message);
  // The files' metadata (the manifest, the report) is read when asked for, the same.
  expect(second.files).toEqual(firstFiles);
  expect(infos).toHaveBeenCalledTimes(1);
  // Another setting of the flight checks: analysed anew (and flagged by it).
  infos.mockClear();
  const high = cardOffload(queue, card, [], { minHeight: 10_000 });
  expect(infos).toHaveBeenCalledTimes(1);
  expect(high.flights[0]!.flags.length).toBeGreaterThan(first.flights[0]!.flags.length);
  // A file of the card changed in the queue (checked in the bucket again): anew too.
  await new Promise((r) => setTimeout(r, 5));
  await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
  infos.mockClear();
  list.mockClear();
  expect(cardOffload(queue, card).flights).toEqual(first.flights);
  expect(infos).toHaveBeenCalledTimes(1);
  expect(list).not.toHaveBeenCalled();
  infos.mockRestore();
  list.mockRestore();
  engine.close();
  queue.close();
});

it('a folder of many files due is listed, not looked at object by object; a deleted object is still caught', async () => {
  const { queue, engine, source, verdict } = setup('listed', svc, 24);
  await engine.scan(source);
  await engine.run({ mode: 'until-idle' });
  const done = queue.list({ sourceId: source.sourceId, states: ['done'], limit: 1000 });
  expect(done.length).toBeGreaterThanOrEqual(24);
  const stat = vi.spyOn(engine.bucket, 'stat');
  const list = vi.spyOn(engine.bucket, 'list');
  // Never checked: every file is due. The flight folder's objects come from one listing page.
  const checked = await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
  expect(checked).toBe(done.length);
  expect(list).toHaveBeenCalled();
  const listedFolders = list.mock.calls.length;
  expect(stat.mock.calls.length).toBeLessThan(done.length - 16);
  expect(verdict()).toMatchObject({ safe: true, reasons: [] });
  // An object deleted from the bucket after its callback: missing by the listing too.
  const gone = done.find((r) => r.state === 'done' && r.objectKey && r.kind === 'media')!;
  const key = gone.state === 'done' ? gone.objectKey! : '';
  const db = new Database(path.join(dir, 'svc', 'service.db'));
  const row = db.prepare('SELECT workspace_id, file FROM bucket_objects WHERE key = ?').get(key) as {
    workspace_id: string;
    file: string;
  };
  db.prepare('DELETE FROM bucket_objects WHERE key = ?').run(key);
  db.close();
  fs.rmSync(path.join(svc.bucket.dataDir, 'objects', row.workspace_id, row.file));
  stat.mockClear();
  list.mockClear();
  await new Promise((r) => setTimeout(r, 5));
  await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
  expect(list).toHaveBeenCalledTimes(listedFolders);
  const after = verdict();
  expect(after.safe).toBe(false);
  expect(after.reasons.join(' ')).toMatch(/missing from the bucket/);
  // Credentials that may not list (a real server's STS policy may allow PUT only): each object is looked at.
  list.mockClear();
  list.mockRejectedValue(Object.assign(new Error('Access Denied'), { status: 403 }));
  await new Promise((r) => setTimeout(r, 5));
  expect(await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 })).toBe(
    done.length,
  );
  expect(stat.mock.calls.length).toBeGreaterThanOrEqual(done.length);
  expect(verdict().safe).toBe(false);
  stat.mockRestore();
  list.mockRestore();
  engine.close();
  queue.close();
});

it('not with a pulled card: its files wait for it', async () => {
  const { queue, engine, source, verdict } = setup('pulled');
  await engine.scan(source);
  engine.sourceRemoved(source.sourceId, 'pulled was removed');
  const v = verdict();
  expect(v.safe).toBe(false);
  expect(v.reasons.join(' ')).toMatch(/10 files waiting for the card .*insert the card again/);
  engine.close();
  queue.close();
});

it('not with a failed file: the reason says which and why', async () => {
  // A server that refuses a camera outside DJI's list (the sample server's rule), with a real bucket.
  const bucket = await startSampleBucket(path.join(dir, 's3'));
  const sample = await startSampleServer({ sts: bucket.sts });
  try {
    const c = buildRtkCard({
      root: path.join(dir, 'failed'),
      mission: 'Quarry',
      exposures: 4,
      missing: [],
      float: [],
    });
    fs.copyFileSync(path.join(FIXTURES, 'M2EA/M2EA_IR.JPG'), path.join(c.root, c.folder, 'M2EA_IR.JPG'));
    const queue = new Queue(path.join(dir, 'state-failed', 'queue.db'));
    const engine = syncLanes({
      queue,
      api: new ApiClient({ baseUrl: sample.baseUrl, workspaceId: sample.workspaceId, token: 'sample-token' }),
      config: parseConfig({}),
    }).engine;
    const source = folderSource(c.root);
    await engine.scan(source);
    await engine.run({ mode: 'until-idle' });
    await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
    const v = cardOffload(queue, { sourceId: source.sourceId, label: 'failed' }).verdict;
    expect(v.safe).toBe(false);
    expect(v.reasons).toEqual([
      expect.stringMatching(
        /^1 file failed \(M2EA_IR\.JPG\): .*Read why in the list, fix it and choose Retry\.$/,
      ),
    ]);
    engine.close();
    queue.close();
  } finally {
    await sample.close();
    await bucket.close();
  }
});

it('not after a switch to another target until the card is there too', async () => {
  const other = await startService({ dataDir: path.join(dir, 'svc-other'), logger: false });
  try {
    const { queue, engine, source, verdict } = setup('switch');
    await engine.scan(source);
    await engine.run({ mode: 'until-idle' });
    await verifySource({ queue, bucket: engine.bucket }, source.sourceId, { olderThanMs: 0 });
    expect(verdict().safe).toBe(true);
    engine.close();
    // The crew signs in to another server: nothing of this card is acknowledged there yet.
    queue.bindTarget(serverTarget(other.baseUrl, other.workspaceId));
    const onOther = syncLanes({ queue, api: api(other), config: parseConfig({}) }).engine;
    await onOther.scan(source);
    const v = verdict();
    expect(v.safe).toBe(false);
    expect(v.message).toMatch(/not safe to format yet — 10 on the way/);
    await onOther.run({ mode: 'until-idle' });
    await verifySource({ queue, bucket: onOther.bucket }, source.sourceId, { olderThanMs: 0 });
    expect(verdict().safe).toBe(true);
    expect(verdict().message).toContain(`workspace ${other.workspaceId}`);
    onOther.close();
    queue.close();
  } finally {
    await other.close();
  }
});
