import { syncLanes } from '../../main/core/sync/peers.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { expect } from 'vitest';
import type { ApiClient } from '../../main/core/api/client.js';
import type { StsResult } from '../../main/core/api/types.js';
import { parseConfig, type Config, type ConfigInput } from '../../main/core/config.js';
import { DmsError } from '../../main/core/errors.js';
import { Queue } from '../../main/core/queue/queue.js';
import type { SyncEngine, FileEvent } from '../../main/core/sync/engine.js';
import { folderSource } from '../../main/core/sources/source.js';

export const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'dji');

/** Real DJI JPGs from the fixtures (M2EA excluded unless asked: no cloud device key). */
export const DJI_FILES = [
  'ZH20T/DJI_20220902151742_0028_T.JPG',
  'ZH20T/DJI_H20T.jpg',
  'M30T/M30T_IR.JPG',
  'M3T/M3T_IR.JPG',
];

export function tempDir(prefix = 'dms-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A card laid out as Pilot 2 writes it: DCIM/<flight folder>/<files>. */
export function makeCard(root: string, folder = 'DJI_202209021517_001_Waypoint1', files = DJI_FILES): string {
  const dir = path.join(root, 'DCIM', folder);
  fs.mkdirSync(dir, { recursive: true });
  for (const f of files) fs.copyFileSync(path.join(FIXTURES, f), path.join(dir, path.basename(f)));
  return root;
}

/** Counts every request the client makes, by "METHOD last-path-segment". */
export function countingFetch(counts: Map<string, number>): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const key = `${init?.method ?? 'GET'} ${url.pathname.split('/').pop()}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return fetch(input, init);
  };
}

export interface RunResult {
  events: FileEvent[];
  bytesSent: number;
  engine: SyncEngine;
}

/** Scans the folders and runs the engine until idle, with a fresh queue handle. */
export async function syncOnce(opts: {
  queueFile: string;
  api: ApiClient;
  roots: string[];
  config?: ConfigInput;
}): Promise<RunResult> {
  const queue = new Queue(opts.queueFile);
  // A lost callback answer is checked after 1 s here instead of the product's 60 s.
  const config: Config = parseConfig({ callbackSettleSeconds: 1, ...opts.config });
  const engine = syncLanes({ queue, api: opts.api, config }).engine;
  const events: FileEvent[] = [];
  engine.on('file', (e) => events.push(e));
  try {
    for (const r of opts.roots) await engine.scan(folderSource(r));
    await engine.run({ mode: 'until-idle' });
    return { events, bytesSent: engine.progress.bytesSent, engine };
  } finally {
    engine.close();
    queue.close();
  }
}

/** An S3 client on the credentials an sts answer gives (checksums only where required, as the agent sends). */
export function s3For(sts: StsResult): S3Client {
  return new S3Client({
    endpoint: sts.endpoint,
    region: sts.region,
    forcePathStyle: true,
    credentials: {
      accessKeyId: sts.credentials.access_key_id,
      secretAccessKey: sts.credentials.access_key_secret,
      sessionToken: sts.credentials.security_token,
    },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export async function getObject(sts: StsResult, key: string): Promise<Buffer> {
  const s3 = s3For(sts);
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: sts.bucket, Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } finally {
    s3.destroy();
  }
}

/** Polls until `check` holds, failing with what was awaited after `ms`. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 20_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The DmsError a promise rejects with (the test fails if it resolves or throws something else). */
export async function failure(p: Promise<unknown>): Promise<DmsError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DmsError);
  return err as DmsError;
}
