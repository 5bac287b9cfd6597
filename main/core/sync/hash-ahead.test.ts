/**
 * The order of hashing and sending (issue 33): a big file of a later lane
 * (a video) is hashed while the files before it are sent, so its upload does
 * not wait for a whole read of it once their turn is over. A real SQLite
 * queue and real files; the server and the bucket are the in-process
 * stand-ins of engine.test.ts.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { memoryBucket, standIn } from '../../../test/support/stand-ins.js';
import type { UploadRequest } from '../storage/types.js';
import { parseConfig } from '../config.js';
import { Queue } from '../queue/queue.js';
import { folderSource } from '../sources/source.js';
import { syncLanes } from './peers.js';

let dir: string;
let folder: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-hash-ahead-'));
  folder = path.join(dir, 'card', 'DCIM', '100MEDIA');
  fs.mkdirSync(folder, { recursive: true });
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

it('a video is hashed while the photos before it are sent; it is still sent after them', async () => {
  // More photos than the rows kept in flight (files x 2 + 4 = 10): the video's turn comes only as they finish.
  for (let i = 1; i <= 12; i++)
    fs.writeFileSync(path.join(folder, `DJI_${String(i).padStart(4, '0')}.JPG`), `photo ${i}`);
  // Above the multipart threshold (16 MiB): a file read again for its upload, never kept in memory.
  fs.writeFileSync(path.join(folder, 'DJI_0013.MP4'), randomBytes(17 * 1024 * 1024));
  const s = standIn();
  const queue = new Queue(path.join(dir, 'queue.db'));
  const bucket = memoryBucket(s.calls);
  const videoState = () => queue.list().find((r) => r.relPath.endsWith('.MP4'))?.state;
  // The bucket takes no photo before the video is hashed (or 10 s passed: a bound on the wait, not a speed).
  const hashedAtPhotoPut: boolean[] = [];
  const inner = bucket.create();
  const lanes = syncLanes({
    queue,
    api: s.api,
    target: { key: 'stand-in#ws', label: 'stand-in', workspaceId: 'ws' },
    config: parseConfig({ callbackSettleSeconds: 0 }),
    createUploader: () => ({
      ...inner,
      upload: async (req: UploadRequest) => {
        if (req.key.endsWith('.JPG')) {
          for (const end = Date.now() + 10_000; videoState() === 'discovered' && Date.now() < end;)
            await new Promise((r) => setTimeout(r, 10));
          hashedAtPhotoPut.push(videoState() !== 'discovered');
        }
        return inner.upload(req);
      },
    }),
    backoff: { baseMs: 20, capMs: 100 },
  });
  await lanes.engine.scan(folderSource(path.join(dir, 'card')));
  await lanes.engine.run({ mode: 'until-idle' });
  expect(hashedAtPhotoPut).toHaveLength(12);
  expect(hashedAtPhotoPut.every(Boolean)).toBe(true);
  // Hashed ahead, sent in its turn: taken once the photos in flight leave room (as before), not first.
  const puts = s.calls.filter((c) => c.startsWith('put '));
  expect(puts.indexOf('put DJI_0013.MP4')).toBeGreaterThan(0);
  expect(queue.list().map((r) => r.state)).toEqual(new Array(13).fill('done'));
  lanes.engine.close();
  queue.close();
}, 60_000);
