/**
 * Issue 7: temporary bucket credentials that expire mid-upload, and a bucket
 * that answers ExpiredToken: the agent refreshes and continues, never
 * restarts an upload from zero. Then a revoked sign-in: stop within
 * seconds with "sign in again", no retry storm, resume after a new sign-in.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plainMessage } from '../../main/core/errors.js';
import { Queue } from '../../main/core/queue/queue.js';
import type { Fault } from './proxy.js';
import {
  duplicateBodies,
  expectPlain,
  expectPromiseKept,
  findSecrets,
  KiB,
  makeCard,
  MiB,
  startEngine,
  startRig,
  syncUntilDone,
  until,
  type Rig,
} from './rig.js';

let rig: Rig;
const stateDirs: string[] = [];
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-creds-' });
});
afterAll(async () => {
  rig.svc.admin.setStsExpireSeconds(3600);
  await rig?.close();
});

const FOLDER = 'DJI_202301011200_001_Creds';
const expiredXml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>`;

function bucketOps(since: number, op: string): number {
  return rig.bucket.records.filter((r) => r.id > since && r.op === op).length;
}

describe('STS credentials that expire', () => {
  it('short-lived credentials (expire 3 s) during a 7 s upload: refreshed, continued, no part sent twice, not one STS call per request', async () => {
    const w = await rig.workspace('sts-short');
    const root = path.join(rig.dir, 'card-short');
    const files = makeCard(root, FOLDER, [
      { name: 'DJI_20230101120000_0001_W.MP4', size: 21 * MiB },
      ...Array.from({ length: 20 }, (_, i) => ({
        name: `DJI_20230101120001_${String(i + 2).padStart(4, '0')}_W.JPG`,
        size: 60 * KiB,
      })),
    ]);
    const queueFile = path.join(rig.dir, 'state-short', 'queue.db');
    stateDirs.push(path.dirname(queueFile));
    const bSince = rig.bucket.records.length;
    const sSince = rig.service.records.length;
    rig.svc.admin.setStsExpireSeconds(3);
    const queue = new Queue(queueFile);
    let run;
    try {
      // 22 MiB at 3 MiB/s: about 7 s, so the credentials expire twice or more mid-upload.
      run = await syncUntilDone({
        queue,
        api: w.api(),
        roots: [root],
        files: files.length,
        config: { partSizeMiB: 5, concurrency: { files: 2, parts: 2 }, bandwidthLimitKiBps: 3072 },
        timeoutMs: 40_000,
      });
    } finally {
      queue.close();
      rig.svc.admin.setStsExpireSeconds(3600);
    }
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
    // Never restarted from zero: one multipart upload, no part accepted twice.
    expect(bucketOps(bSince, 'CreateMultipartUpload')).toBe(1);
    expect(duplicateBodies(rig.bucket, bSince).bytes).toBe(0);
    expect(run.events.filter((e) => e.error).map((e) => e.error!.message)).toEqual([]);
    const stsCalls = rig.service.records.filter((r) => r.id > sSince && r.op === 'sts').length;
    const seconds = run.ms / 1000;
    // Refreshed (more than one answer), but not on every request: credentials
    // living 3 s are good for their first two thirds (StsCache's own rule).
    const bucketRequests = rig.bucket.records.filter((r) => r.id > bSince).length;
    console.log(
      `short STS: ${seconds.toFixed(1)} s, ${stsCalls} STS answers for ${bucketRequests} bucket requests`,
    );
    expect(stsCalls).toBeGreaterThan(1);
    expect(
      stsCalls,
      `${stsCalls} STS answers for ${bucketRequests} bucket requests in ${seconds.toFixed(1)} s`,
    ).toBeLessThanOrEqual(Math.ceil(seconds / 2) + 2);
  }, 60_000);

  const variants: Array<{ name: string; fault: Fault }> = [
    {
      name: 'after reading the body',
      fault: {
        kind: 'respond',
        status: 400,
        body: expiredXml,
        headers: { 'content-type': 'application/xml' },
      },
    },
    // What real gates (and the embedded bucket's own gate) do: answer at once, close, never read the part.
    {
      name: 'at once, without reading the body',
      fault: {
        kind: 'respond',
        status: 400,
        body: expiredXml,
        headers: { 'content-type': 'application/xml' },
        readBody: false,
      },
    },
  ];
  it.each(variants)(
    'the bucket answers ExpiredToken $name: new credentials, the upload continues where it was',
    async ({ name, fault }) => {
      const w = await rig.workspace(`expired-${name}`);
      const slug = name.replace(/\W+/g, '-');
      const root = path.join(rig.dir, `card-expired-${slug}`);
      const files = makeCard(root, FOLDER, [
        { name: 'DJI_20230101120000_0001_W.MP4', size: 26 * MiB },
        { name: 'DJI_20230101120001_0002_W.JPG', size: 700 * KiB },
      ]);
      const queueFile = path.join(rig.dir, `state-expired-${slug}`, 'queue.db');
      stateDirs.push(path.dirname(queueFile));
      const bSince = rig.bucket.records.length;
      const sSince = rig.service.records.length;
      // Parts 3 and 4 (after two good ones), and the small file's PutObject, are refused as expired, once each.
      const refuse = new Set([3, 4]);
      const partRule = rig.bucket.inject({
        name: 'expired-part',
        match: (r) => r.op === 'UploadPart' && refuse.delete(r.partNumber ?? 0),
        fault,
        times: 2,
      });
      const putRule = rig.bucket.inject({
        name: 'expired-put',
        match: (r) => r.op === 'PutObject',
        fault,
        times: 1,
      });
      const queue = new Queue(queueFile);
      let run;
      try {
        run = await syncUntilDone({
          queue,
          api: w.api(),
          roots: [root],
          files: files.length,
          config: { partSizeMiB: 5, concurrency: { files: 2, parts: 1 } },
          timeoutMs: 30_000,
        });
      } finally {
        queue.close();
      }
      expect([partRule.applied, putRule.applied]).toEqual([2, 1]);
      await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
      expect(bucketOps(bSince, 'CreateMultipartUpload')).toBe(1);
      expect(duplicateBodies(rig.bucket, bSince).bytes).toBe(0);
      // Each refusal fetched new credentials, and the same request went again at once (no file error).
      expect(
        rig.service.records.filter((r) => r.id > sSince && r.op === 'sts').length,
      ).toBeGreaterThanOrEqual(2);
      expect(run.events.filter((e) => e.error).map((e) => `${e.error!.kind}: ${e.error!.message}`)).toEqual(
        [],
      );
    },
    40_000,
  );
});

describe('revoked sign-in', () => {
  it('stops within seconds with "sign in again", makes a handful of requests at most, resumes after sign-in', async () => {
    const w = await rig.workspace('revoked');
    const root = path.join(rig.dir, 'card-revoked');
    const files = makeCard(
      root,
      FOLDER,
      Array.from({ length: 12 }, (_, i) => ({
        name: `DJI_20230101120000_${String(i + 1).padStart(4, '0')}_W.JPG`,
        size: 150 * KiB,
      })),
    );
    const queueFile = path.join(rig.dir, 'state-revoked', 'queue.db');
    stateDirs.push(path.dirname(queueFile));
    const queue = new Queue(queueFile);
    const api = w.api();
    // Slow enough (512 KiB/s) that the revocation lands mid-card.
    const run = await startEngine({
      queue,
      api,
      roots: [root],
      config: { concurrency: { files: 2, parts: 1 }, bandwidthLimitKiBps: 512 },
    });
    try {
      await until('two files done', () => queue.counts().done.files >= 2, 20_000);
      const revokedAt = Date.now();
      const sSince = rig.service.records.length;
      const bSince = rig.bucket.records.length;
      expect(await rig.svc.admin.revokeToken(w.token)).toBe(true);
      await until('auth-required', () => run.engine.state === 'auth-required', 10_000);
      const stoppedAfter = run.states.find((s) => s.state === 'auth-required')!.at - revokedAt;
      // Uploads in flight finish or stop; their callbacks meet the revocation.
      await new Promise((r) => setTimeout(r, 1_500));
      const after = rig.service.records.filter((r) => r.id > sSince);
      const refused = after.filter((r) => r.upstreamStatus === 401);
      console.log(
        `revoked: stopped after ${stoppedAfter} ms; ${after.length} service requests after revocation (${refused.length} refused), ${rig.bucket.records.length - bSince} bucket requests`,
      );
      expect(stoppedAfter).toBeLessThan(5_000);
      expect(run.engine.error?.kind).toBe('auth');
      const last = run.states.at(-1)!;
      expect(last.state).toBe('auth-required');
      // What the CLI, the tray and `watch` show for the state.
      const plain = plainMessage(run.engine.error!);
      expect(plain).toMatch(/sign in again/i);
      expectPlain(plain);
      // No retry storm: a handful of requests at most (those already in flight), and silence after.
      expect(after.length).toBeLessThanOrEqual(5);
      const quietSince = rig.service.records.length;
      await new Promise((r) => setTimeout(r, 1_500));
      expect(rig.service.records.length - quietSince).toBe(0);
      expect(queue.counts().done.files).toBeLessThan(files.length);

      // A new sign-in: the same engine continues.
      const fresh = await rig.svc.admin.createToken({ workspaceId: w.ws });
      rig.secrets.add(fresh);
      api.setToken(fresh);
      run.engine.resume();
      await until('all done after sign-in', () => queue.counts().done.files === files.length, 30_000);
    } finally {
      await run.stop();
      queue.close();
    }
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  }, 60_000);

  it('the real CLI with a revoked token: exits 3 within seconds, says to sign in again, no retry storm', async () => {
    const bin = path.resolve('dist/main/cli/bin.js');
    expect(fs.existsSync(bin), 'run npm run build first').toBe(true);
    const w = await rig.workspace('revoked-cli');
    await rig.svc.admin.revokeToken(w.token);
    const root = path.join(rig.dir, 'card-revoked-cli');
    makeCard(
      root,
      FOLDER,
      Array.from({ length: 30 }, (_, i) => ({
        name: `DJI_20230101120000_${String(i + 1).padStart(4, '0')}_W.JPG`,
        size: 50 * KiB,
      })),
    );
    const state = path.join(rig.dir, 'state-revoked-cli');
    stateDirs.push(state);
    const since = rig.service.records.length;
    const t0 = Date.now();
    const child = spawn(
      process.execPath,
      [
        bin,
        'sync',
        root,
        '--json',
        '--state',
        state,
        '--server',
        rig.service.url,
        '--token',
        w.token,
        '--workspace',
        w.ws,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    fs.writeFileSync(path.join(state, 'cli-output.txt'), out + err);
    expect(code, out + err).toBe(3);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const summary = JSON.parse(out.trim().split('\n').at(-1)!) as {
      error?: { kind: string; message: string };
      pending: number;
    };
    expect(summary.error?.kind).toBe('auth');
    expect(summary.error?.message).toMatch(/sign in again/i);
    expect(summary.pending).toBe(30);
    const requests = rig.service.records.filter((r) => r.id > since);
    console.log(
      `revoked CLI: exit ${code} after ${Date.now() - t0} ms, ${requests.length} requests for 30 files`,
    );
    // At most the requests already in flight (the engine keeps files x 2 + 4 = 10 rows in flight), none after.
    expect(requests.length).toBeLessThanOrEqual(10);
    expect(requests.every((r) => r.upstreamStatus === 401)).toBe(true);
  }, 30_000);
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
