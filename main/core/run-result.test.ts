/**
 * The run's result from a real SQLite queue: the store's rows and copy
 * records written through their doors (as the engine and the copy lane
 * write them), the run's events fed to its tally, then one read of the
 * facts. What `sync`, `watch` and the app print comes from this value only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/harness.js';
import { DmsError, plainMessage } from './errors.js';
import type { Destination } from './queue/copies.js';
import type { FileInfo } from './queue/file-info.js';
import { Queue, type QueueRow } from './queue/queue.js';
import { gatherRun, runResult, RunTally, type RunFacts } from './run-result.js';

let dir: string;
let queue: Queue;
beforeEach(() => {
  dir = tempDir('dms-run-result-');
  queue = new Queue(path.join(dir, 'queue.db'));
  queue.bindTarget({ key: 'https://a.example#ws-1', label: 'https://a.example', workspaceId: 'ws-1' });
});
afterEach(() => {
  queue.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const CARD = { sourceId: 'card-1', label: 'M3E_CARD' };
const info = (name: string): FileInfo => ({
  name,
  path: '',
  fileGroupId: 'group-1',
  metadata: {},
  subFileType: 0,
  isOriginal: true,
});

/** A card's files, found by a scan. */
function scan(names: string[], size = 1000): QueueRow[] {
  return queue.observe(
    names.map((n) => ({
      sourceId: CARD.sourceId,
      relPath: `DCIM/${n}`,
      absPath: `/media/card/DCIM/${n}`,
      size,
      mtimeMs: 1_700_000_000_000,
      kind: 'media' as const,
    })),
  ).pending;
}

/** A destination that counts for the card, with its folder on disk. */
function destination(label: string): Destination {
  const p = path.join(dir, label);
  fs.mkdirSync(p);
  return queue.copies.destination({ path: p, label, role: 'archive', keepDays: null });
}

/** The copy lane's writes for one file on one destination, through the store's door. */
function copy(row: QueueRow, d: Destination, end: 'verified' | 'differs' | 'stopped', reason = ''): void {
  const c = queue.copies;
  c.apply(row, d.id, { type: 'want', path: path.join(d.path, 'M3E_CARD', row.relPath) });
  if (end === 'stopped') return void c.apply(row, d.id, { type: 'stopped', reason });
  c.apply(row, d.id, { type: 'writing' });
  if (end === 'differs') return void c.apply(row, d.id, { type: 'differs', reason });
  c.apply(row, d.id, {
    type: 'verified',
    copy: {
      md5: 'a'.repeat(32),
      xxh3: null,
      copySize: row.size,
      copyMtimeMs: row.mtimeMs,
      readBack: 'direct',
    },
  });
}

/** The upload lane's writes up to done (uploaded by us, callback recorded). */
function upload(row: QueueRow, tally: RunTally): void {
  let r = queue.apply(row, {
    type: 'hashed',
    fingerprint: String(row.id).padStart(32, '0'),
    tinyFingerprint: 't',
    info: info(row.relPath),
  });
  r = queue.apply(r, { type: 'not-known' });
  r = queue.apply(r, { type: 'uploaded', objectKey: `k/${row.id}`, bytesSent: row.size, verified: null });
  queue.apply(r, { type: 'recorded' });
  tally.file({ id: row.id, sourceId: row.sourceId, size: row.size, outcome: 'uploaded' });
}

const facts = (tally: RunTally, extra: Partial<RunFacts> = {}): RunFacts => ({
  cards: gatherRun(queue, [CARD]),
  tally,
  bytesSent: 0,
  engine: { state: 'idle', error: null },
  cancelled: false,
  ...extra,
});

describe('the run result, from one read of a real queue', () => {
  it('all done: copied and verified per destination, uploaded and sent, nothing left, stopped because done', () => {
    const tally = new RunTally();
    const ssd = destination('SSD');
    queue.copies.setCounting(CARD.sourceId, [ssd.id]);
    const rows = scan(['DJI_0001.JPG', 'DJI_0002.JPG']);
    tally.scanned(CARD.sourceId, 3, 0);
    for (const r of rows) copy(r, ssd, 'verified');
    for (const r of rows) upload(r, tally);
    tally.copies(CARD.sourceId, {
      safe: true,
      made: true,
      message: 'M3E_CARD: 2 files copied and verified on SSD',
    });

    const r = runResult(facts(tally, { bytesSent: 2000 }));
    expect(r.stopped).toEqual({ kind: 'done' });
    expect(r.left).toEqual({ files: [], card: 0, server: 0, link: 0, failed: 0 });
    expect(r.uploaded).toEqual({ files: 2, bytes: 2000 });
    expect(r.bytesSent).toBe(2000);
    expect(r.skipped).toBe(3);
    expect(r.copied).toEqual([{ destination: ssd, files: 2, bytes: 2000 }]);
    expect(r.cards[0]).toMatchObject({
      label: 'M3E_CARD',
      copies: { safe: true },
      destinations: [
        { destination: ssd, copied: { files: 2, bytes: 2000 }, verified: 2, failed: 0, stopped: null },
      ],
    });
    expect(r.waitingForLink).toEqual({ files: 0, bytes: 0, lanes: [] });
  });

  it('a copy that failed: counted as failed on its destination, not as copied; the copies verdict not safe', () => {
    const tally = new RunTally();
    const ssd = destination('SSD');
    queue.copies.setCounting(CARD.sourceId, [ssd.id]);
    const [good, bad] = scan(['DJI_0001.JPG', 'DJI_0002.JPG']);
    copy(good!, ssd, 'verified');
    copy(bad!, ssd, 'differs', 'the copy read back differs at byte 4096');
    tally.copies(CARD.sourceId, {
      safe: false,
      made: false,
      message: 'M3E_CARD: not safe to format from the copies yet',
    });

    const r = runResult(facts(tally));
    const d = r.cards[0]!.destinations[0]!;
    expect(d).toMatchObject({ copied: { files: 1, bytes: 1000 }, verified: 1, failed: 1, stopped: null });
    expect(r.copied).toEqual([{ destination: ssd, files: 1, bytes: 1000 }]);
    expect(r.cards[0]!.copies).toEqual({
      safe: false,
      made: false,
      message: expect.stringMatching(/not safe/),
    });
    // Not uploaded (no server in this run): both left for the server, none failed.
    expect(r.left).toMatchObject({ server: 2, failed: 0, card: 0 });
  });

  it('a drive pulled mid-copy: its reason and what was verified there before; then the card pulled: left for the card', () => {
    const tally = new RunTally();
    const ssd = destination('SSD');
    const t7 = destination('T7_BACKUP');
    queue.copies.setCounting(CARD.sourceId, [ssd.id, t7.id]);
    const rows = scan(['DJI_0001.JPG', 'DJI_0002.JPG', 'DJI_0003.JPG']);
    for (const r of rows) copy(r, ssd, 'verified');
    copy(rows[0]!, t7, 'verified');
    const unplugged = 'T7_BACKUP is not plugged in: its copy of this card stopped.';
    copy(rows[1]!, t7, 'stopped', unplugged);
    copy(rows[2]!, t7, 'stopped', unplugged);
    // The card pulled too: its files wait for it.
    queue.parkSource(CARD.sourceId, 'M3E_CARD was removed; its files will continue when it is back.');

    const r = runResult(facts(tally));
    const [onSsd, onT7] = r.cards[0]!.destinations;
    expect(onSsd).toMatchObject({ verified: 3, failed: 0, stopped: null });
    // Unplugged is a stop with its reason, never "did not read back as written".
    expect(onT7).toMatchObject({ verified: 1, failed: 0, stopped: unplugged, copied: { files: 1 } });
    expect(r.left).toMatchObject({ card: 3, server: 0, failed: 0 });
    expect(r.left.files.every((f) => f.why === 'card' && f.state === 'waiting-for-source')).toBe(true);
    expect(r.stopped).toEqual({ kind: 'card-pulled', cards: ['M3E_CARD'] });
  });

  it('a server unreachable: what is left waits for the server, and the run says why it stopped', () => {
    const tally = new RunTally();
    const rows = scan(['DJI_0001.JPG', 'DJI_0002.JPG']);
    const down = new DmsError('network', 'connect ECONNREFUSED 127.0.0.1:1', { retryable: true });
    for (const row of rows)
      queue.apply(row, { type: 'retry', error: down, at: Date.now() + 60_000, callbackSettled: false });
    // And one refused for good: failed, with the server's reason, said apart.
    const [refused] = scan(['DJI_0003.JPG']);
    const no = new DmsError('rejected', 'The server refused DJI_0003.JPG: unsupported file', {
      retryable: false,
    });
    queue.apply(refused!, { type: 'failed', error: no, callbackSettled: false });
    tally.file({
      id: refused!.id,
      sourceId: CARD.sourceId,
      size: 1000,
      outcome: 'failed',
      error: { kind: 'rejected', plain: 'x' },
    });

    const r = runResult(facts(tally, { engine: { state: 'offline', error: down } }));
    expect(r.stopped).toEqual({
      kind: 'server-unreachable',
      reason: plainMessage(down, 'request'),
      error: down,
    });
    expect(r.left).toMatchObject({ server: 2, failed: 1, card: 0, link: 0 });
    expect(r.failedNow).toBe(1);
    expect(r.left.files.find((f) => f.why === 'failed')).toMatchObject({
      absPath: '/media/card/DCIM/DJI_0003.JPG',
      message: expect.stringMatching(/unsupported file/),
    });
    expect(r.uploaded).toEqual({ files: 0, bytes: 0 });
    // The same run with the server answering again and Ctrl+C: cancelled, not "unreachable".
    expect(runResult(facts(tally, { cancelled: true })).stopped).toEqual({ kind: 'cancelled' });
  });

  it('a link that holds a lane (metered): what is left in it waits for the link, per lane; the rest for the server', () => {
    const tally = new RunTally();
    const [photo, video] = scan(['DJI_0001.JPG', 'DJI_0002.MP4'], 5000);
    expect(photo!.lane).not.toBe(video!.lane);
    const r = runResult(facts(tally, { heldLanes: new Set([video!.lane]) }));
    expect(r.left).toMatchObject({ link: 1, server: 1, card: 0, failed: 0 });
    expect(r.left.files.find((f) => f.why === 'link')?.absPath).toBe(video!.absPath);
    expect(r.waitingForLink).toEqual({
      files: 1,
      bytes: 5000,
      lanes: [{ lane: video!.lane, files: 1, bytes: 5000 }],
    });
    // Without a link, nothing waits for it.
    expect(runResult(facts(tally)).waitingForLink).toEqual({ files: 0, bytes: 0, lanes: [] });
  });
});
