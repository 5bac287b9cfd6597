/**
 * Issue 7: the card pulled mid-hash and mid-upload (it waits, then continues
 * when it is back), and a file changed on disk mid-upload or mid-hash (read
 * again, never recorded with a stale fingerprint).
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type SourceEvent } from '../../main/core/agent.js';
import { parseConfig, type ConfigInput } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { CardMonitor } from '../../main/core/sources/cards.js';
import {
  duplicateBodies,
  expectPlain,
  expectPromiseKept,
  FAST_BACKOFF,
  findSecrets,
  KiB,
  makeCard,
  md5,
  MiB,
  startRig,
  syncUntilDone,
  until,
  type Rig,
  type Workspace,
} from './rig.js';

let rig: Rig;
const stateDirs: string[] = [];
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-sources-' });
});
afterAll(async () => {
  await rig?.close();
});

const FOLDER = 'DJI_202301011200_001_Sources';

/** Furthest read position among this process's open descriptors on `file` (Linux /proc), or null when none is open. */
function readPosition(file: string): number | null {
  let fds: string[];
  try {
    fds = fs.readdirSync('/proc/self/fd');
  } catch {
    return null;
  }
  let best: number | null = null;
  for (const fd of fds) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) !== file) continue;
      const m = /pos:\s+(\d+)/.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (m) best = Math.max(best ?? 0, Number(m[1]));
    } catch {
      // closed meanwhile
    }
  }
  return best;
}

function startAgent(w: Workspace, mount: string, state: string, config: ConfigInput) {
  stateDirs.push(state);
  const queue = new Queue(path.join(state, 'queue.db'));
  const agent = new Agent({
    queue,
    api: w.api(),
    config: parseConfig(config),
    quietMs: 300,
    backoff: FAST_BACKOFF,
  });
  const events: SourceEvent[] = [];
  agent.on('source', (e) => events.push(e));
  agent.start();
  agent.watchCards(new CardMonitor({ mountRoots: [mount], intervalMs: 100 }));
  return { agent, queue, events, queueFile: path.join(state, 'queue.db') };
}

describe.skipIf(process.platform !== 'linux')('card pulled', () => {
  it('mid-hash: the files wait for the card (none failed), then finish when it is back', async () => {
    const w = await rig.workspace('pulled-mid-hash');
    const mount = path.join(rig.dir, 'mnt-hash');
    const card = path.join(mount, 'M30T_CARD');
    const files = makeCard(card, FOLDER, [
      { name: 'DJI_20230101120000_0001_W.MP4', size: 64 * MiB },
      { name: 'DJI_20230101120001_0002_W.JPG', size: 300 * KiB },
      { name: 'DJI_20230101120002_0003_W.JPG', size: 310 * KiB },
    ]);
    const big = files[0]!.abs;
    const { agent, queue, events, queueFile } = startAgent(w, mount, path.join(rig.dir, 'state-hash'), {});
    try {
      // Pull the card when a quarter of the video has been read for its fingerprint.
      await until('the video being hashed', () => (readPosition(big) ?? 0) >= 16 * MiB, 20_000, 1);
      const pos = readPosition(big);
      const away = path.join(rig.dir, 'pulled-hash');
      fs.renameSync(card, away);
      expect(pos).toBeLessThan(64 * MiB);
      const video = () => queue.list().find((r) => r.relPath.endsWith('.MP4'))!;
      expect(video().state).toBe('discovered');
      await until('the removal', () => events.some((e) => e.type === 'source-removed'));
      await until('every file parked', () =>
        queue.list().every((r) => r.state === 'waiting-for-source' || r.state === 'done'),
      );
      expect(queue.counts().failed.files).toBe(0);
      const removed = events.find((e) => e.type === 'source-removed')!;
      expectPlain(removed.message);
      expect(removed.message).toMatch(
        /M30T_CARD was removed; \d files? will continue when it is inserted again/,
      );
      expect(video().state).not.toBe('hashed'); // never recorded from a half read
      expect('fingerprint' in video()).toBe(false);

      fs.renameSync(away, card);
      await until(
        'completion after the card is back',
        () => queue.counts().done.files === files.length,
        30_000,
      );
    } finally {
      await agent.stop();
      queue.close();
    }
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  }, 60_000);

  it('mid-upload: parked with its parts, resumes without re-sending an accepted part', async () => {
    const w = await rig.workspace('pulled-mid-upload');
    const mount = path.join(rig.dir, 'mnt-upload');
    const card = path.join(mount, 'H20T_CARD');
    const files = makeCard(card, FOLDER, [
      { name: 'DJI_20230101120000_0001_W.MP4', size: 31 * MiB },
      { name: 'DJI_20230101120001_0002_W.JPG', size: 500 * KiB },
    ]);
    const since = rig.bucket.records.length;
    const away = path.join(rig.dir, 'pulled-upload');
    let pulledAt = 0;
    // The card goes away while part 3 is half sent.
    const rule = rig.bucket.inject({
      name: 'pull-card',
      match: (r) => r.op === 'UploadPart' && r.partNumber === 3,
      fault: { kind: 'pass' },
      hooks: {
        onHalfBody: () => {
          pulledAt = Date.now();
          fs.renameSync(card, away);
        },
      },
      times: 1,
    });
    const { agent, queue, events, queueFile } = startAgent(w, mount, path.join(rig.dir, 'state-upload'), {
      partSizeMiB: 5,
      concurrency: { files: 1, parts: 1 },
      bandwidthLimitKiBps: 16 * 1024,
    });
    try {
      await until('the pull', () => pulledAt > 0, 20_000);
      await until('parking', () => queue.list().some((r) => r.state === 'waiting-for-source'));
      const video = () => queue.list().find((r) => r.relPath.endsWith('.MP4'))!;
      await until('the video parked', () => video().state === 'waiting-for-source');
      const kept = queue.parts(video().id).length;
      // Parts 1 and 2, and part 3 if it finished before the monitor saw the card go (its bytes were in memory).
      expect(kept).toBeGreaterThanOrEqual(2);
      expect(kept).toBeLessThan(7);
      expect(queue.counts().failed.files).toBe(0);
      await until('the removal', () => events.some((e) => e.type === 'source-removed'));
      fs.renameSync(away, card);
      await until('completion', () => queue.counts().done.files === files.length, 30_000);
      // Sent again: only what was not accepted when the card went. The bucket's
      // ListParts may also show the part in flight at the pull (accepted after the
      // agent let go of the card, so not in the queue): then one part less.
      expect([31 * MiB - kept * 5 * MiB, 31 * MiB - (kept + 1) * 5 * MiB]).toContain(video().bytesSent);
    } finally {
      await agent.stop();
      queue.close();
    }
    expect(rule.applied).toBe(1);
    // Parts recorded before the pull (1, 2) are never sent again. The part in
    // flight at the pull (3) may go twice: the bucket can accept it while the
    // agent already let go of the card. At most that one part.
    const dup = duplicateBodies(rig.bucket, since);
    expect(dup.repeats.map((r) => r.partNumber).filter((n) => (n ?? 0) < 3)).toEqual([]);
    expect(dup.bytes).toBeLessThanOrEqual(5 * MiB);
    expect(rig.bucket.records.filter((r) => r.id > since && r.op === 'CreateMultipartUpload')).toHaveLength(
      1,
    );
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  }, 60_000);
});

describe('file changed on disk', () => {
  const cases: Array<{
    name: string;
    op: 'UploadPart' | 'PutObject';
    size: number;
    change: (file: string) => void;
  }> = [
    {
      name: 'mid-multipart, rewritten in place (same size)',
      op: 'UploadPart',
      size: 17 * MiB,
      change: (f) => {
        const fd = fs.openSync(f, 'r+');
        fs.writeSync(fd, randomBytes(3 * MiB), 0, 3 * MiB, 0);
        fs.closeSync(fd);
      },
    },
    {
      name: 'mid-multipart, appended to',
      op: 'UploadPart',
      size: 17 * MiB,
      change: (f) => fs.appendFileSync(f, randomBytes(777)),
    },
    {
      name: 'mid-PutObject of a small file, rewritten (same size)',
      op: 'PutObject',
      size: 2 * MiB,
      change: (f) => {
        const fd = fs.openSync(f, 'r+');
        fs.writeSync(fd, randomBytes(1000), 0, 1000, 1000);
        fs.closeSync(fd);
      },
    },
    {
      // Under 1 MiB the bytes sent are the ones read for the fingerprint (steps.ts):
      // the check after the upload must still catch the new version.
      name: 'mid-PutObject of a file read whole, rewritten (same size)',
      op: 'PutObject',
      size: 600 * KiB,
      change: (f) => {
        const fd = fs.openSync(f, 'r+');
        fs.writeSync(fd, randomBytes(1000), 0, 1000, 5000);
        fs.closeSync(fd);
      },
    },
  ];
  it.each(cases)(
    '$name: read again, recorded with the fingerprint of the final content',
    async ({ name, op, size, change }) => {
      const w = await rig.workspace(name);
      const slug = name.replace(/\W+/g, '-');
      const root = path.join(rig.dir, `card-${slug}`);
      const files = makeCard(root, FOLDER, [
        {
          name: op === 'UploadPart' ? 'DJI_20230101120000_0001_W.MP4' : 'DJI_20230101120000_0001_W.JPG',
          size,
        },
        { name: 'DJI_20230101120001_0002_W.JPG', size: 100 * KiB },
      ]);
      const target = files[0]!;
      const before = md5(fs.readFileSync(target.abs));
      const rule = rig.bucket.inject({
        name: `change-${slug}`,
        match: (r) =>
          r.op === op &&
          r.key?.endsWith(path.basename(target.abs)) === true &&
          (op === 'PutObject' || r.partNumber === 2),
        fault: { kind: 'pass' },
        hooks: { onHalfBody: () => change(target.abs) },
        times: 1,
      });
      const state = path.join(rig.dir, `state-${slug}`);
      stateDirs.push(state);
      const queueFile = path.join(state, 'queue.db');
      const queue = new Queue(queueFile);
      try {
        await syncUntilDone({
          queue,
          api: w.api(),
          roots: [root],
          files: files.length,
          config: { partSizeMiB: 5, concurrency: { files: 1, parts: 1 }, bandwidthLimitKiBps: 16 * 1024 },
        });
        expect(queue.list().map((r) => r.state)).toEqual(['done', 'done']);
      } finally {
        queue.close();
      }
      expect(rule.applied).toBe(1);
      const after = md5(fs.readFileSync(target.abs));
      expect(after).not.toBe(before);
      const records = await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
      expect(records.map((r) => r.fingerprint)).not.toContain(before);
    },
    40_000,
  );

  it.skipIf(process.platform !== 'linux')(
    'mid-hash: the half-read fingerprint is never used',
    async () => {
      const w = await rig.workspace('changed-mid-hash');
      const root = path.join(rig.dir, 'card-changed-hash');
      const files = makeCard(root, FOLDER, [{ name: 'DJI_20230101120000_0001_W.MP4', size: 64 * MiB }]);
      const f = files[0]!.abs;
      const before = md5(fs.readFileSync(f));
      const state = path.join(rig.dir, 'state-changed-hash');
      stateDirs.push(state);
      const queueFile = path.join(state, 'queue.db');
      const queue = new Queue(queueFile);
      const watcher = until(
        'the hash at a quarter',
        () => (readPosition(f) ?? 0) >= 16 * MiB,
        20_000,
        1,
      ).then(() => {
        const fd = fs.openSync(f, 'r+');
        fs.writeSync(fd, randomBytes(4096), 0, 4096, 60 * MiB);
        fs.closeSync(fd);
      });
      try {
        await syncUntilDone({ queue, api: w.api(), roots: [root], files: 1 });
      } finally {
        queue.close();
      }
      await watcher;
      const records = await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
      expect(records[0]!.fingerprint).not.toBe(before);
    },
    40_000,
  );
});

it('no token or STS secret in anything the agent wrote', () => {
  expect(stateDirs.length).toBeGreaterThan(0);
  expect(
    findSecrets(
      stateDirs.filter((d) => fs.existsSync(d)),
      rig.secrets,
    ),
  ).toEqual([]);
});
