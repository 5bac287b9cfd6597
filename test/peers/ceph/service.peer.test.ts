/**
 * The reference service's external bucket mode against a real S3 engine:
 * Ceph's RADOS Gateway (see rgw.ts). The service keeps the RGW user's keys
 * and hands out AssumeRole credentials from RGW's own STS, limited by a
 * session policy to the workspace's prefix; RGW (not the service) enforces
 * that limit and verifies every signature.
 */
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES } from '../../../main/service/index.js';
import { call, paths, s3From, startTemp, type Loose } from '../../service/helpers.js';
import { BIN, rgwBucketConfig } from './peer.js';
import { startRgw, type Rgw } from './rgw.js';

const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

let rgw: Rgw;
let svc: Awaited<ReturnType<typeof startTemp>>;

beforeAll(async () => {
  rgw = await startRgw();
  console.log(
    `rgw: boot ${rgw.figures.bootMs} ms, user/role/bucket ${rgw.figures.setupMs} ms, ${rgw.figures.rssMiB} MiB`,
  );
  svc = await startTemp({ externalBucket: rgwBucketConfig(rgw) });
});
afterAll(async () => {
  await svc?.stop();
  await rgw?.stop();
});

async function sts(ws = svc.workspaceId, token = svc.token, baseUrl = svc.baseUrl): Promise<Loose> {
  const r = await call({ baseUrl, token }, 'POST', paths(ws).sts);
  expect(r.body.code, JSON.stringify(r.body)).toBe(0);
  return r.body.data;
}

/** The bucket's error code for a request, or 'OK'. */
async function outcome(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
    return 'OK';
  } catch (err) {
    const e = err as { name: string; $metadata?: { httpStatusCode?: number } };
    return `${e.$metadata?.httpStatusCode ?? '?'} ${e.name}`;
  }
}

const put = (c: S3Client, bucket: string, key: string) => () =>
  c.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `bytes of ${key}` }));

describe('the sts endpoint on Ceph RGW', () => {
  it('answers credentials from RGW AssumeRole for the workspace prefix, never the user keys', async () => {
    const data = await sts();
    expect(data).toMatchObject({
      provider: 'minio',
      endpoint: rgw.endpoint,
      bucket: rgw.bucket,
      object_key_prefix: `crews/${svc.workspaceId}`,
    });
    const c = data.credentials;
    expect(c.security_token.length).toBeGreaterThan(20);
    expect(c.access_key_id).not.toBe(rgw.accessKeyId);
    expect(JSON.stringify(data)).not.toContain(rgw.secretAccessKey);
    // A 3600 s request is granted as asked (RGW allows up to 12 h).
    expect(c.expire).toBeGreaterThan(3500);
    expect(c.expire).toBeLessThanOrEqual(3600);

    const s3 = s3From(data);
    try {
      const key = `${data.object_key_prefix}/flight/photo.jpg`;
      expect(await outcome(put(s3, data.bucket, key))).toBe('OK');
      const got = await s3.send(new GetObjectCommand({ Bucket: data.bucket, Key: key }));
      expect(await got.Body!.transformToString()).toBe(`bytes of ${key}`);
    } finally {
      s3.destroy();
    }
  });

  it('RGW refuses writes outside the prefix, other workspaces, a wrong secret and a missing token', async () => {
    const other = await svc.admin.createWorkspace('other crew');
    const mine = await sts();
    const theirs = await sts(other, await svc.admin.createToken({ workspaceId: other }));
    const theirKey = `${theirs.object_key_prefix}/flight/theirs.jpg`;
    const theirS3 = s3From(theirs);
    const s3 = s3From(mine);
    const wrongSecret = s3From({
      ...mine,
      credentials: {
        ...mine.credentials,
        access_key_secret: `x${mine.credentials.access_key_secret.slice(1)}`,
      },
    });
    const noToken = new S3Client({
      endpoint: rgw.endpoint,
      region: rgw.region,
      forcePathStyle: true,
      credentials: {
        accessKeyId: mine.credentials.access_key_id,
        secretAccessKey: mine.credentials.access_key_secret,
      },
    });
    try {
      expect(await outcome(put(theirS3, rgw.bucket, theirKey))).toBe('OK');
      const results = {
        outsideAll: await outcome(put(s3, rgw.bucket, 'elsewhere/x.jpg')),
        bucketRoot: await outcome(put(s3, rgw.bucket, 'x.jpg')),
        // The prefix plus more characters is not the prefix: `crews/<ws>x/...`.
        prefixLookalike: await outcome(put(s3, rgw.bucket, `${mine.object_key_prefix}x/y.jpg`)),
        otherWorkspaceWrite: await outcome(
          put(s3, rgw.bucket, `${theirs.object_key_prefix}/flight/mine.jpg`),
        ),
        otherWorkspaceRead: await outcome(() =>
          s3.send(new GetObjectCommand({ Bucket: rgw.bucket, Key: theirKey })),
        ),
        wrongSecret: await outcome(put(wrongSecret, rgw.bucket, `${mine.object_key_prefix}/w.jpg`)),
        noToken: await outcome(put(noToken, rgw.bucket, `${mine.object_key_prefix}/n.jpg`)),
        listOwn: await outcome(() =>
          s3.send(new ListObjectsV2Command({ Bucket: rgw.bucket, Prefix: `${mine.object_key_prefix}/` })),
        ),
        listAll: await outcome(() => s3.send(new ListObjectsV2Command({ Bucket: rgw.bucket }))),
      };
      expect(results).toEqual({
        outsideAll: '403 AccessDenied',
        bucketRoot: '403 AccessDenied',
        prefixLookalike: '403 AccessDenied',
        otherWorkspaceWrite: '403 AccessDenied',
        otherWorkspaceRead: '403 AccessDenied',
        wrongSecret: '403 SignatureDoesNotMatch',
        noToken: '403 AccessDenied',
        listOwn: 'OK',
        listAll: '403 AccessDenied',
      });
    } finally {
      for (const c of [s3, theirS3, wrongSecret, noToken]) c.destroy();
    }
  });
});

describe('the service configured for RGW', () => {
  it('as provider aws with stsEndpoint (the AWS code path): RGW credentials, scoped the same way', async () => {
    const aws = await startTemp({
      externalBucket: rgwBucketConfig(rgw, {
        provider: 'aws',
        stsEndpoint: rgw.endpoint,
        objectKeyPrefix: 'aws',
      }),
    });
    try {
      const data = await sts(aws.workspaceId, aws.token, aws.baseUrl);
      expect(data).toMatchObject({ provider: 'aws', object_key_prefix: `aws/${aws.workspaceId}` });
      const s3 = s3From(data);
      try {
        const key = `${data.object_key_prefix}/a.jpg`;
        expect(await outcome(put(s3, data.bucket, key))).toBe('OK');
        expect(await outcome(put(s3, data.bucket, `crews/${aws.workspaceId}/a.jpg`))).toBe(
          '403 AccessDenied',
        );
        // The service's own HEAD (fast-upload, callback) reaches RGW too.
        const cb = await call(aws, 'POST', paths(aws.workspaceId).callback, {
          body: {
            name: 'a.jpg',
            object_key: key,
            result: 0,
            fingerprint: md5(Buffer.from(`bytes of ${key}`)),
          },
        });
        expect(cb.body.code, JSON.stringify(cb.body)).toBe(0);
        const missing = await call(aws, 'POST', paths(aws.workspaceId).callback, {
          body: {
            name: 'b.jpg',
            object_key: `${data.object_key_prefix}/b.jpg`,
            result: 0,
            fingerprint: 'e'.repeat(32),
          },
        });
        expect(missing.body.code).toBe(CODES.OBJECT_NOT_FOUND);
      } finally {
        s3.destroy();
      }
    } finally {
      await aws.stop();
    }
  });

  it('an expire shorter than RGW sessions (900 s at least) is what clients are told', async () => {
    svc.admin.setStsExpireSeconds(60);
    try {
      expect((await sts()).credentials.expire).toBeLessThanOrEqual(60);
      expect((await sts()).credentials.expire).toBeGreaterThanOrEqual(59);
    } finally {
      svc.admin.setStsExpireSeconds(3600);
    }
  });

  it('`serve --bucket-config <file>` (the secret in a file, not on the command line) hands out RGW credentials', async () => {
    const file = path.join(svc.dataDir, 'rgw-bucket.json');
    fs.writeFileSync(file, JSON.stringify(rgwBucketConfig(rgw)), { mode: 0o600 });
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--data', path.join(svc.dataDir, 'served'), '--bucket-config', file],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let out = '';
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d) => (out += String(d)).includes('\n') && resolve(out));
        child.on('exit', (code) => reject(new Error(`serve ended with ${code}`)));
      });
      const ready = JSON.parse(line) as { base_url: string; workspace_id: string; token: string };
      const data = await sts(ready.workspace_id, ready.token, ready.base_url);
      expect(data.object_key_prefix).toBe(`crews/${ready.workspace_id}`);
      const s3 = s3From(data);
      try {
        expect(await outcome(put(s3, data.bucket, `${data.object_key_prefix}/served.jpg`))).toBe('OK');
      } finally {
        s3.destroy();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
