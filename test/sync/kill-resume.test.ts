import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListPartsCommand } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { getObject, s3For, tempDir } from '../support/harness.js';

// The real CLI (built JS, as a user runs it) is killed with SIGKILL in the
// middle of a multipart upload, then started again on the same state.
const BIN = path.resolve('dist/main/cli/bin.js');
const MiB = 1024 * 1024;
let dir: string;
let svc: RunningService;

beforeAll(async () => {
  dir = tempDir('dms-kill-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function runCli(state: string, card: string) {
  return spawn(
    process.execPath,
    [
      BIN,
      'sync',
      card,
      '--json',
      '--state',
      state,
      '--server',
      svc.baseUrl,
      '--token',
      svc.token,
      '--workspace',
      svc.workspaceId,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

function recordedParts(queueFile: string): number {
  if (!fs.existsSync(queueFile)) return 0;
  const db = new Database(queueFile, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM parts').get() as { n: number }).n;
  } catch {
    return 0; // schema not created yet
  } finally {
    db.close();
  }
}

/** The parts the bucket holds of the row's multipart upload (ListParts, with the service's credentials). */
async function bucketParts(queueFile: string): Promise<number> {
  const db = new Database(queueFile, { readonly: true });
  const row = db.prepare('SELECT object_key, upload_id FROM files').get() as {
    object_key: string;
    upload_id: string;
  };
  db.close();
  const sts = await new ApiClient({
    baseUrl: svc.baseUrl,
    workspaceId: svc.workspaceId,
    token: svc.token,
  }).getSts();
  const s3 = s3For(sts);
  try {
    const out = await s3.send(
      new ListPartsCommand({ Bucket: sts.bucket, Key: row.object_key, UploadId: row.upload_id }),
    );
    return out.Parts?.length ?? 0;
  } finally {
    s3.destroy();
  }
}

it('SIGKILL mid-multipart: restart sends only the missing parts, object intact, one callback', async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  const card = path.join(dir, 'card');
  const file = path.join(card, 'DCIM', 'DJI_202301011200_001_Bridge', 'DJI_20230101120000_0001_W.MP4');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const size = 48 * MiB + 12345;
  fs.writeFileSync(file, crypto.randomBytes(size));
  const state = path.join(dir, 'state');
  fs.mkdirSync(state, { recursive: true });
  // 5 MiB parts, two at a time, at 16 MiB/s: long enough to be killed halfway.
  fs.writeFileSync(
    path.join(state, 'config.json'),
    JSON.stringify({ partSizeMiB: 5, concurrency: { files: 1, parts: 2 }, bandwidthLimitKiBps: 16 * 1024 }),
  );
  const queueFile = path.join(state, 'queue.db');

  const first = runCli(state, card);
  const exited = new Promise((r) => first.on('exit', r));
  const deadline = Date.now() + 20_000;
  while (recordedParts(queueFile) < 3 && Date.now() < deadline) await sleep(20);
  first.kill('SIGKILL');
  await exited;
  const partsAtKill = recordedParts(queueFile);
  expect(partsAtKill).toBeGreaterThanOrEqual(3);
  expect(partsAtKill).toBeLessThan(10); // 10 parts in all: it really was mid-upload
  expect((await svc.admin.mediaRecords()).filter((r) => r.source === 'callback')).toHaveLength(0);
  // The bucket may hold one more part than the queue recorded: the one whose
  // answer the kill cut off. ListParts tells the restart; it is not sent again.
  const inBucket = await bucketParts(queueFile);
  expect(inBucket).toBeGreaterThanOrEqual(partsAtKill);
  expect(inBucket).toBeLessThanOrEqual(partsAtKill + 2); // at most the two parts in flight

  const second = runCli(state, card);
  let out = '';
  second.stdout.on('data', (d) => (out += String(d)));
  const code = await new Promise((r) => second.on('exit', r));
  expect(code, out).toBe(0);

  // Bytes sent by the second run: exactly the parts the bucket did not have.
  const db = new Database(queueFile, { readonly: true });
  const row = db.prepare('SELECT state, bytes_sent, object_key FROM files').get() as {
    state: string;
    bytes_sent: number;
    object_key: string;
  };
  db.close();
  expect(row.state).toBe('done');
  expect(row.bytes_sent).toBe(size - inBucket * 5 * MiB);

  const records = (await svc.admin.mediaRecords()).filter((r) => r.source === 'callback');
  expect(records).toHaveLength(1);
  const sts = await new ApiClient({
    baseUrl: svc.baseUrl,
    workspaceId: svc.workspaceId,
    token: svc.token,
  }).getSts();
  const body = await getObject(sts, row.object_key);
  expect(body.length).toBe(size);
  expect(body.equals(fs.readFileSync(file))).toBe(true);
}, 60_000);
