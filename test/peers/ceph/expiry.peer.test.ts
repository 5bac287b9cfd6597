/**
 * Temporary credentials that run out, with the real STS of a real S3
 * engine (Ceph RGW, see rgw.ts) behind the service's external mode.
 *
 * RGW grants sessions of 900 s at the least, so two honest ways in:
 * - the service tells clients a shorter `expire` than RGW's lifetime (its
 *   `stsExpireSeconds`): the agent fetches new credentials ahead of time,
 *   each from a real AssumeRole, and RGW takes them;
 * - RGW's own clock is moved (radosgw runs under libfaketime): credentials
 *   issued while its clock was 280 s behind are expired once it is 640 s
 *   ahead (920 s later by its clock). Both offsets stay within RGW's 15
 *   minutes of tolerated skew from this machine's clock; clients that had
 *   taken on RGW's earlier time (the AWS SDK, and the agent, learn the
 *   bucket's clock from its answers) are refused once as skewed and correct
 *   themselves (clock.peer.test.ts). RGW answers the expired token with 403
 *   AccessDenied (its log: "ERROR: Token expired"), not ExpiredToken.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type RunningService } from '../../../main/service/index.js';
import { ApiClient } from '../../../main/core/api/client.js';
import { tempDir, until } from '../../support/harness.js';
import {
  BIN,
  expectCardInBucket,
  isAssumeRole,
  makeDjiCard,
  MiB,
  newCrew,
  queueRows,
  rgwBucketConfig,
  rgwRequests,
  runSync,
} from './peer.js';
import { startRgw, type Rgw } from './rgw.js';

let rgw: Rgw;
let svc: RunningService;
let dir: string;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-peer-expiry-');
  rgw = await startRgw({ fakeClock: true });
  svc = await startService({
    dataDir: path.join(dir, 'svc'),
    logger: false,
    externalBucket: rgwBucketConfig(rgw),
  });
});
afterAll(async () => {
  await svc?.close();
  await rgw?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function stateDir(name: string, config: object): string {
  const state = path.join(dir, name);
  fs.mkdirSync(state, { recursive: true });
  fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(config));
  return state;
}

/** RGW's log from `since` (a length of it read earlier) once it shows `last`, which the agent's work ends with. */
async function logAfter(since: number, last: (log: string) => boolean): Promise<string> {
  await until('the end of the upload in RGW log', () => last(rgw.log().slice(since)), 10_000);
  return rgw.log().slice(since);
}

it('the service says expire 3 s (RGW grants 900 s): the agent fetches new credentials from real AssumeRole calls ahead of time, and RGW takes each set', async () => {
  const crew = await newCrew(svc, 'short expire');
  const card = path.join(dir, 'card-short');
  const files = makeDjiCard(card, 24 * MiB + 999);
  // 24 MiB at 3 MiB/s: about 8 s, so several lifetimes of 3 s.
  const state = stateDir('state-short', {
    partSizeMiB: 5,
    concurrency: { files: 2, parts: 2 },
    bandwidthLimitKiBps: 3072,
  });
  const since = rgw.log().length;
  svc.admin.setStsExpireSeconds(3);
  const t0 = Date.now();
  let result;
  try {
    result = await runSync(svc, crew, state, card).done;
  } finally {
    svc.admin.setStsExpireSeconds(3600);
  }
  const seconds = (Date.now() - t0) / 1000;
  expect(result.code, `${result.out}\n${result.err}`).toBe(0);
  await expectCardInBucket(rgw, svc, crew, state, files);

  const video = queueRows(state).find((r) => r.abs_path.endsWith('.MP4'))!.object_key!;
  const requests = rgwRequests(
    await logAfter(since, (l) => l.includes(`POST /${rgw.bucket}/${video}?uploadId=`)),
  );
  const assumeRoles = requests.filter(isAssumeRole);
  console.log(
    `expire 3 s: ${seconds.toFixed(1)} s, ${assumeRoles.length} AssumeRole calls, ${requests.length} RGW requests`,
  );
  // Refreshed ahead of time, more than once, every set accepted: no refusal at all.
  expect(assumeRoles.length).toBeGreaterThan(2);
  expect(assumeRoles.every((r) => r.status === 200)).toBe(true);
  expect(requests.filter((r) => r.status >= 400)).toEqual([]);
  // Not one STS call per request: each set serves its first two thirds (2 s).
  expect(assumeRoles.length).toBeLessThanOrEqual(Math.ceil(seconds / 2) + 2);
});

it('RGW finds the token expired mid-multipart (its clock moved 920 s): AccessDenied, the agent gets new credentials and finishes, nothing sent twice', async () => {
  await rgw.setClockOffset(-280);
  const crew = await newCrew(svc, 'expired token');
  const card = path.join(dir, 'card-expired');
  const size = 40 * MiB + 4321;
  const files = makeDjiCard(card, size);
  const videoPath = files.find((f) => f.endsWith('.MP4'))!;
  // One part at a time at 4 MiB/s: about 10 s for the video.
  const state = stateDir('state-expired', {
    partSizeMiB: 5,
    concurrency: { files: 1, parts: 1 },
    bandwidthLimitKiBps: 4096,
  });
  // Sessions of RGW's shortest lifetime, 900 s: the service then says 620 s (RGW's clock is behind).
  svc.admin.setStsExpireSeconds(900);
  // Credentials of the same vintage as the agent's, for the test's own check.
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: crew.ws, token: crew.token });
  const old = await api.getSts();
  expect(old.credentials.expire).toBeGreaterThan(600);
  expect(old.credentials.expire).toBeLessThanOrEqual(620);

  const since = rgw.log().length;
  const agent = runSync(svc, crew, state, card);
  const videoParts = () => queueRows(state).find((r) => r.abs_path === videoPath)?.parts ?? 0;
  await until('two parts of the video', () => videoParts() >= 2, 60_000);
  await rgw.setClockOffset(640);
  const jumpedAt = rgw.log().length;

  // RGW now refuses credentials of that vintage, for the token's age alone.
  // One attempt only: exactly one of RGW's "Token expired" lines is the probe's.
  const oldS3 = new S3Client({
    endpoint: old.endpoint,
    region: old.region,
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: {
      accessKeyId: old.credentials.access_key_id,
      secretAccessKey: old.credentials.access_key_secret,
      sessionToken: old.credentials.security_token,
    },
  });
  try {
    const refused = await oldS3
      .send(
        new PutObjectCommand({ Bucket: old.bucket, Key: `${old.object_key_prefix}/probe.jpg`, Body: 'x' }),
      )
      .then(
        () => 'OK',
        (e: { name: string; $metadata?: { httpStatusCode?: number } }) =>
          `${e.$metadata?.httpStatusCode} ${e.name}`,
      );
    expect(refused).toBe('403 AccessDenied');
  } finally {
    oldS3.destroy();
  }

  const result = await agent.done.finally(() => svc.admin.setStsExpireSeconds(3600));
  expect(result.code, `${result.out}\n${result.err}`).toBe(0);
  const rows = await expectCardInBucket(rgw, svc, crew, state, files);
  const key = rows.find((r) => r.abs_path === videoPath)!.object_key!;

  const log = await logAfter(since, (l) => l.includes(`POST /${rgw.bucket}/${key}?uploadId=`));
  const afterJump = log.slice(jumpedAt - since);
  const expiredLines = afterJump.match(/ERROR: Token expired/g) ?? [];
  const requests = rgwRequests(log);
  const refusedParts = rgwRequests(afterJump).filter(
    (r) => r.target.startsWith(`/${rgw.bucket}/${key}?partNumber=`) && r.status === 403,
  );
  const acceptedParts = requests.filter(
    (r) => r.target.startsWith(`/${rgw.bucket}/${key}?partNumber=`) && r.status === 200,
  );
  console.log(
    `expired token: ${expiredLines.length} "Token expired" in RGW, ${refusedParts.length} part(s) refused, ` +
      `${rgwRequests(afterJump).filter(isAssumeRole).length} AssumeRole after the jump`,
  );
  // A real refusal of the agent's own requests (the probe accounts for one line), then fresh credentials.
  expect(expiredLines.length).toBeGreaterThanOrEqual(2);
  expect(refusedParts.length).toBeGreaterThanOrEqual(1);
  expect(
    rgwRequests(afterJump).filter((r) => isAssumeRole(r) && r.status === 200).length,
  ).toBeGreaterThanOrEqual(1);
  // Never restarted from zero: one multipart upload, each part accepted once.
  expect(
    requests.filter((r) => r.method === 'POST' && r.target.startsWith(`/${rgw.bucket}/${key}?uploads`)),
  ).toHaveLength(1);
  expect(acceptedParts).toHaveLength(Math.ceil(size / (5 * MiB)));
  expect(new Set(acceptedParts.map((r) => /partNumber=(\d+)/.exec(r.target)![1])).size).toBe(
    acceptedParts.length,
  );
});
