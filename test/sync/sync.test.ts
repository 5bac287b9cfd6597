import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { Queue } from '../../main/core/queue/queue.js';
import { startService, type RunningService } from '../../main/service/index.js';
import {
  countingFetch,
  DJI_FILES,
  FIXTURES,
  getObject,
  makeCard,
  syncOnce,
  tempDir,
} from '../support/harness.js';

// Integration: the engine against the real reference service over HTTP, its
// embedded s3rver bucket, a real SQLite queue, and real DJI files on disk.
let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-sync-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const client = (counts?: Map<string, number>) =>
  new ApiClient({
    baseUrl: svc.baseUrl,
    workspaceId: svc.workspaceId,
    token: svc.token,
    ...(counts ? { fetch: countingFetch(counts) } : {}),
  });

describe('sync against the reference service', () => {
  it('uploads a card once: byte-identical objects, one record per file, right positions', async () => {
    const card = makeCard(path.join(dir, 'card-a'));
    const queueFile = path.join(dir, 'state-a', 'queue.db');
    const run = await syncOnce({ queueFile, api: client(), roots: [card] });

    expect(run.events.map((e) => e.outcome).sort()).toEqual(['uploaded', 'uploaded', 'uploaded', 'uploaded']);
    const records = (await svc.admin.mediaRecords()).filter((r) => r.source === 'callback');
    expect(records).toHaveLength(DJI_FILES.length);

    const sts = await client().getSts();
    for (const f of DJI_FILES) {
      const rec = records.find((r) => r.name === path.basename(f))!;
      expect(rec.path).toBe('DJI_202209021517_001_Waypoint1');
      expect(rec.object_key.startsWith(sts.object_key_prefix)).toBe(true);
      const body = await getObject(sts, rec.object_key);
      expect(body.equals(fs.readFileSync(path.join(FIXTURES, f)))).toBe(true);
    }

    // Values from the exiftool dump shipped with the file (DJI_20220902151742_0028_T.txt):
    // GPS 35°18'1.92" S, 71°31'41.14" W; AbsoluteAltitude +205.570; RelativeAltitude +39.436;
    // GimbalYawDegree +90.20; DateTimeOriginal 2022-09-02 15:17:42; camera ZH20T.
    const h20t = records.find((r) => r.name === 'DJI_20220902151742_0028_T.JPG')!;
    const md = h20t.metadata as { shoot_position: { lat: number; lng: number }; [k: string]: unknown };
    expect(md.shoot_position.lat).toBeCloseTo(-(35 + 18 / 60 + 1.92 / 3600), 5);
    expect(md.shoot_position.lng).toBeCloseTo(-(71 + 31 / 60 + 41.14 / 3600), 5);
    expect(md.absolute_altitude).toBeCloseTo(205.57, 3);
    expect(md.relative_altitude).toBeCloseTo(39.436, 3);
    expect(md.gimbal_yaw_degree).toBeCloseTo(90.2, 3);
    expect(md.created_time).toMatch(/^2022-09-02T15:17:42[+-]\d{2}:\d{2}$/);
    expect(h20t.ext).toMatchObject({ payload_model_key: '1-43-0', is_original: true });
    expect(String(h20t.ext!.tinny_fingerprint)).toBe(`${h20t.fingerprint}_2022_9_2_15_17_42`);

    const queue = new Queue(queueFile);
    expect(queue.counts().done.files).toBe(DJI_FILES.length);
    queue.close();
  });

  it('re-running on the same card makes no fast-upload, STS or callback request at all', async () => {
    const card = makeCard(path.join(dir, 'card-b'));
    const queueFile = path.join(dir, 'state-b', 'queue.db');
    await syncOnce({ queueFile, api: client(), roots: [card] });
    const counts = new Map<string, number>();
    const again = await syncOnce({ queueFile, api: client(counts), roots: [card] });
    expect(again.events).toEqual([]);
    expect([...counts.entries()]).toEqual([]);
  });

  it('a card of hundreds of files: each one handled exactly once (one fast-upload, one PUT, one callback)', async () => {
    // More files than the engine lists at a time (64), in several folders:
    // a row must never be handed to two workers (a regression seen in the fault suite).
    const card = path.join(dir, 'card-many');
    const n = 300;
    for (let i = 0; i < n; i++) {
      const folder = path.join(card, 'DCIM', `DJI_202301011200_00${1 + (i % 3)}_Many`);
      fs.mkdirSync(folder, { recursive: true });
      fs.writeFileSync(
        path.join(folder, `DJI_20230101120000_${String(i).padStart(4, '0')}_W.JPG`),
        `file ${i} `.repeat(50 + i),
      );
    }
    const counts = new Map<string, number>();
    const run = await syncOnce({
      queueFile: path.join(dir, 'state-many', 'queue.db'),
      api: client(counts),
      roots: [card],
    });
    expect(run.events).toHaveLength(n);
    expect(new Set(run.events.map((e) => e.id)).size).toBe(n);
    expect(run.events.every((e) => e.outcome === 'uploaded')).toBe(true);
    expect(counts.get('POST fast-upload')).toBe(n);
    expect(counts.get('POST upload-callback')).toBe(n);
    expect(run.bytesSent).toBe(run.events.reduce((sum, e) => sum + e.size, 0));

    // The same card again with a fresh state: every file finishes at its
    // fast-upload, many at once, which is when a listing ran dry mid-dispatch.
    const again = new Map<string, number>();
    const second = await syncOnce({
      queueFile: path.join(dir, 'state-many-2', 'queue.db'),
      api: client(again),
      roots: [card],
    });
    expect(second.events.every((e) => e.outcome === 'fast-uploaded')).toBe(true);
    expect(second.events).toHaveLength(n);
    expect(again.get('POST fast-upload')).toBe(n);
  });

  it('a second card with the same content (fresh state) sends zero bytes', async () => {
    const card = makeCard(path.join(dir, 'card-c'), 'DJI_202209021600_002_Waypoint2');
    const counts = new Map<string, number>();
    const run = await syncOnce({
      queueFile: path.join(dir, 'state-c', 'queue.db'),
      api: client(counts),
      roots: [card],
    });
    expect(run.events.every((e) => e.outcome === 'fast-uploaded')).toBe(true);
    expect(run.events).toHaveLength(DJI_FILES.length);
    expect(run.bytesSent).toBe(0);
    expect(counts.get('POST sts') ?? 0).toBe(0);
    expect(counts.get('POST upload-callback') ?? 0).toBe(0);
    // the server records the files under their new flight folder, pointing at the existing objects
    const fast = (await svc.admin.mediaRecords()).filter((r) => r.path === 'DJI_202209021600_002_Waypoint2');
    expect(fast).toHaveLength(DJI_FILES.length);
  });

  it('a callback stored by the server whose answer is lost still leaves exactly one record', async () => {
    const ws = await svc.admin.createWorkspace('lost-answer');
    const token = await svc.admin.createToken({ workspaceId: ws });
    const card = path.join(dir, 'card-d');
    fs.mkdirSync(path.join(card, 'DCIM', '100MEDIA'), { recursive: true });
    fs.writeFileSync(path.join(card, 'DCIM', '100MEDIA', 'DJI_0001.JPG'), Buffer.alloc(300_000, 7));
    let lost = 0;
    // Forwards the callback to the server, then drops its answer (as a dying link would), twice.
    const losingFetch: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (
        (input instanceof Request ? input.url : input.toString()).endsWith('/upload-callback') &&
        lost < 2
      ) {
        lost++;
        await res.arrayBuffer();
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
        });
      }
      return res;
    };
    const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: ws, token, fetch: losingFetch });
    const queueFile = path.join(dir, 'state-d', 'queue.db');
    // Each run leaves the file for later after a lost answer (backoff); run until done.
    for (let i = 0; i < 5; i++) {
      // The test skips the backoff by hand, in the file (nothing in the app writes it but the store).
      if (fs.existsSync(queueFile)) {
        const db = new Database(queueFile);
        db.prepare('UPDATE files SET next_attempt_at = 0').run();
        db.close();
      }
      await syncOnce({ queueFile, api, roots: [card] });
      const done = new Queue(queueFile);
      const c = done.counts().done.files;
      done.close();
      if (c === 1) break;
    }
    expect(lost).toBe(1); // the second attempt asked fast-upload first and found it recorded
    const records = await svc.admin.mediaRecords(ws);
    expect(records.filter((r) => r.source === 'callback')).toHaveLength(1);
    const q = new Queue(queueFile);
    expect(q.counts().done.files).toBe(1);
    q.close();
  });
});
