/**
 * What the Ceph peer tests share: the service's configuration for the RGW
 * under test, a card of real DJI media plus a large video, the real CLI
 * (built JS, the token in DMS_TOKEN, never on its command line), and reads
 * of the bucket with the RGW user's own keys (not the agent's).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListPartsCommand, S3Client } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import type { ExternalBucketConfig, RunningService } from '../../../main/service/index.js';
import { DJI_FILES, makeCard } from '../../support/harness.js';
import type { Rgw } from './rgw.js';

export const MiB = 1024 * 1024;
export const BIN = path.resolve('dist/main/cli/bin.js');
export const FLIGHT = 'DJI_202209021517_001_Waypoint1';

/** The RGW deployment as an operator would configure it: S3-compatible, path-style, STS on the same endpoint. */
export function rgwBucketConfig(r: Rgw, change: Partial<ExternalBucketConfig> = {}): ExternalBucketConfig {
  return {
    provider: 'minio',
    endpoint: r.endpoint,
    region: r.region,
    bucket: r.bucket,
    objectKeyPrefix: 'crews',
    accessKeyId: r.accessKeyId,
    secretAccessKey: r.secretAccessKey,
    roleArn: r.roleArn,
    ...change,
  };
}

/** The real DJI photos of the fixtures, plus a video of `videoBytes` random bytes; returns every file's path. */
export function makeDjiCard(root: string, videoBytes: number): string[] {
  makeCard(root, FLIGHT, DJI_FILES);
  const video = path.join(root, 'DCIM', FLIGHT, 'DJI_20220902151800_0029_W.MP4');
  fs.writeFileSync(video, crypto.randomBytes(videoBytes));
  return fs.readdirSync(path.dirname(video)).map((f) => path.join(path.dirname(video), f));
}

export const md5 = (data: Buffer): string => crypto.createHash('md5').update(data).digest('hex');

/** A workspace of its own for each test, and a token for it. */
export interface Crew {
  ws: string;
  token: string;
}

export async function newCrew(svc: RunningService, name: string): Promise<Crew> {
  const ws = await svc.admin.createWorkspace(name);
  return { ws, token: await svc.admin.createToken({ workspaceId: ws }) };
}

export interface CliRun {
  child: ChildProcess;
  /** What it printed on stderr so far (its log). */
  log(): string;
  /** Exit code, with everything it printed. */
  done: Promise<{ code: number | null; out: string; err: string }>;
}

/**
 * `drone-media-sync sync <card> --json` against the service, as a crew's
 * script runs it: the token in DMS_TOKEN, never on the command line. `env`
 * adds to the environment (DMS_LOG_LEVEL=info: each failed step logged).
 */
export function runSync(
  svc: Pick<RunningService, 'baseUrl'>,
  crew: Crew,
  state: string,
  card: string,
  env: NodeJS.ProcessEnv = {},
): CliRun {
  const child = spawn(
    process.execPath,
    [BIN, 'sync', card, '--json', '--state', state, '--server', svc.baseUrl, '--workspace', crew.ws],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env, DMS_TOKEN: crew.token } },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, out, err })),
  );
  return { child, log: () => err, done };
}

/** Runs the CLI to its end; expects exit 0 and returns its JSON summary line. */
export async function syncAll(
  svc: RunningService,
  crew: Crew,
  state: string,
  card: string,
): Promise<Summary> {
  const { code, out, err } = await runSync(svc, crew, state, card).done;
  expect(code, `${out}\n${err}`).toBe(0);
  return JSON.parse(out.trim().split('\n').at(-1)!) as Summary;
}

export interface Summary {
  uploaded: number;
  fast_uploaded: number;
  failed: number;
  pending: number;
  bytes_sent: number;
}

export interface QueueRow {
  abs_path: string;
  state: string;
  object_key: string | null;
  upload_id: string | null;
  part_size: number | null;
  bytes_sent: number;
  parts: number;
}

/** The queue's own view of each file (read-only, beside a running or killed agent). */
export function queueRows(state: string): QueueRow[] {
  const file = path.join(state, 'queue.db');
  if (!fs.existsSync(file)) return [];
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        `SELECT abs_path, state, object_key, upload_id, part_size, bytes_sent,
                (SELECT COUNT(*) FROM parts WHERE parts.file_id = files.id) AS parts
           FROM files ORDER BY abs_path`,
      )
      .all() as QueueRow[];
  } catch {
    return []; // the schema is not there yet
  } finally {
    db.close();
  }
}

/** An S3 client with the RGW user's long-term keys: what the test reads the bucket with. */
export function ownerS3(r: Rgw): S3Client {
  return new S3Client({
    endpoint: r.endpoint,
    region: r.region,
    forcePathStyle: true,
    credentials: { accessKeyId: r.accessKeyId, secretAccessKey: r.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** MD5 of an object's bytes as RGW serves them. */
export async function objectMd5(s3: S3Client, bucket: string, key: string): Promise<string> {
  const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return md5(Buffer.from(await out.Body!.transformToByteArray()));
}

/** The object's ETag as RGW reports it ("<md5>" for one PUT, "<md5 of part md5s>-<parts>" for multipart). */
export async function objectEtag(s3: S3Client, bucket: string, key: string): Promise<string> {
  const out = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  return (out.ETag ?? '').replace(/"/g, '');
}

/** Part numbers RGW holds for an unfinished multipart upload. */
export async function partsInBucket(
  s3: S3Client,
  bucket: string,
  key: string,
  uploadId: string,
): Promise<number[]> {
  const out = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  return (out.Parts ?? []).map((p) => p.PartNumber!).sort((a, b) => a - b);
}

/**
 * The promise kept: every file of the card is done in the queue, its
 * object in RGW byte-identical, and the service holds exactly one callback
 * record for it.
 */
export async function expectCardInBucket(
  r: Rgw,
  svc: RunningService,
  crew: Crew,
  state: string,
  files: string[],
): Promise<QueueRow[]> {
  const rows = queueRows(state);
  expect(rows.map((x) => [path.basename(x.abs_path), x.state])).toEqual(
    files.map((f) => [path.basename(f), 'done']).sort((a, b) => a[0]!.localeCompare(b[0]!)),
  );
  const s3 = ownerS3(r);
  try {
    for (const row of rows) {
      expect(row.object_key!.startsWith(`crews/${crew.ws}/`), row.object_key!).toBe(true);
      expect(await objectMd5(s3, r.bucket, row.object_key!), row.abs_path).toBe(
        md5(fs.readFileSync(row.abs_path)),
      );
    }
  } finally {
    s3.destroy();
  }
  const callbacks = (await svc.admin.mediaRecords(crew.ws)).filter((m) => m.source === 'callback');
  expect(callbacks.map((m) => m.object_key).sort()).toEqual(rows.map((x) => x.object_key).sort());
  return rows;
}

export interface RgwRequest {
  method: string;
  /** Path and query as sent, e.g. `/bucket/key?partNumber=3&uploadId=...`. */
  target: string;
  status: number;
}

/** The requests in a slice of RGW's log (its access lines: `"PUT /bucket/key?... HTTP/1.1" 200`). */
export function rgwRequests(log: string): RgwRequest[] {
  return [...log.matchAll(/ beast: \S+ .*?"([A-Z]+) (\S+) HTTP\/1\.[01]" (\d{3}) /g)].map((m) => ({
    method: m[1]!,
    target: m[2]!,
    status: Number(m[3]),
  }));
}

/** STS AssumeRole calls (the SDK POSTs them to the endpoint's root). */
export const isAssumeRole = (r: RgwRequest): boolean => r.method === 'POST' && r.target === '/';
