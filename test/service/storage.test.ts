import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, getSts, paths, s3From, startTemp, type Loose } from './helpers.js';

let s: Awaited<ReturnType<typeof startTemp>>;
beforeAll(async () => {
  s = await startTemp();
});
afterAll(async () => {
  await s.stop();
});

async function s3Error(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return (err as Error).name;
  }
  return 'no error';
}

describe('sts', () => {
  it('issues fresh temporary credentials for the embedded bucket', async () => {
    const r = await call(s, 'POST', paths(s.workspaceId).sts);
    expect(r.body.code).toBe(0);
    expect(r.body.data).toEqual({
      bucket: 'media',
      endpoint: s.bucket.endpoint,
      object_key_prefix: s.workspaceId,
      provider: 'minio',
      region: 'us-east-1',
      credentials: {
        access_key_id: expect.stringMatching(/^ASIA[A-Z2-7]{16}$/),
        access_key_secret: expect.any(String),
        expire: 3600,
        security_token: expect.any(String),
      },
    });
    expect(s.bucket.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.bucket.objectKeyPrefix).toBe(s.workspaceId);
    const again = await getSts(s);
    expect(again.credentials.access_key_id).not.toBe(r.body.data.credentials.access_key_id);
    expect(again.credentials.security_token).not.toBe(r.body.data.credentials.security_token);
  });

  it('stores and returns bytes exactly, single and multipart', async () => {
    const sts = await getSts(s);
    const client = s3From(sts);
    const key = `${sts.object_key_prefix}/one.bin`;
    const body = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    await client.send(new PutObjectCommand({ Bucket: sts.bucket, Key: key, Body: body }));
    const got = await client.send(new GetObjectCommand({ Bucket: sts.bucket, Key: key }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);

    const mkey = `${sts.object_key_prefix}/multi.bin`;
    const { UploadId } = await client.send(
      new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key: mkey }),
    );
    const parts = [Buffer.alloc(5 * 1024 * 1024, 1), Buffer.from('tail')];
    const etags = [];
    for (const [i, part] of parts.entries()) {
      const out = await client.send(
        new UploadPartCommand({ Bucket: sts.bucket, Key: mkey, UploadId, PartNumber: i + 1, Body: part }),
      );
      etags.push({ ETag: out.ETag!, PartNumber: i + 1 });
    }
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: sts.bucket,
        Key: mkey,
        UploadId,
        MultipartUpload: { Parts: etags },
      }),
    );
    const whole = await client.send(new GetObjectCommand({ Bucket: sts.bucket, Key: mkey }));
    expect(Buffer.from(await whole.Body!.transformToByteArray()).equals(Buffer.concat(parts))).toBe(true);
    client.destroy();
  });
});

describe('the embedded bucket only takes the credentials it issued', () => {
  it('refuses anonymous requests', async () => {
    const res = await fetch(`${s.bucket.endpoint}/media/${s.workspaceId}/x.jpg`, {
      method: 'PUT',
      body: 'x',
    });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('<Code>AccessDenied</Code>');
  });

  it('refuses an unknown access key and a wrong session token', async () => {
    const sts = await getSts(s);
    const put = (creds: Loose) =>
      s3From({ ...sts, credentials: { ...sts.credentials, ...creds } }).send(
        new PutObjectCommand({ Bucket: sts.bucket, Key: `${sts.object_key_prefix}/a.jpg`, Body: 'a' }),
      );
    expect(await s3Error(put({ access_key_id: 'ASIAUNKNOWNUNKNOWN00' }))).toBe('InvalidAccessKeyId');
    expect(await s3Error(put({ access_key_id: 'S3RVER' }))).toBe('InvalidAccessKeyId');
    expect(await s3Error(put({ security_token: 'forged' }))).toBe('InvalidToken');
    expect(await s3Error(put({}))).toBe('no error');
  });

  it('keeps each workspace under its own prefix', async () => {
    const other = await s.admin.createWorkspace('Other');
    const otherSts = await getSts(s, other, await s.admin.createToken({ workspaceId: other }));
    expect(otherSts.object_key_prefix).toBe(other);
    const client = s3From(otherSts);
    const put = (key: string) => client.send(new PutObjectCommand({ Bucket: 'media', Key: key, Body: 'x' }));
    expect(await s3Error(put(`${s.workspaceId}/intrusion.jpg`))).toBe('AccessDenied');
    expect(await s3Error(put(`${other}/../${s.workspaceId}/x.jpg`))).toBe('AccessDenied');
    expect(
      await s3Error(
        client.send(new PutObjectCommand({ Bucket: 'other-bucket', Key: `${other}/x`, Body: 'x' })),
      ),
    ).toBe('AccessDenied');
    expect(await s3Error(put(`${other}/fine.jpg`))).toBe('no error');
    client.destroy();
  });

  it('honours the expiry it announced', async () => {
    expect(() => s.admin.setStsExpireSeconds(0)).toThrow(/positive integer/);
    s.admin.setStsExpireSeconds(1);
    try {
      const sts = await getSts(s);
      expect(sts.credentials.expire).toBe(1);
      const client = s3From(sts);
      const put = () =>
        client.send(
          new PutObjectCommand({ Bucket: sts.bucket, Key: `${sts.object_key_prefix}/late.jpg`, Body: 'x' }),
        );
      expect(await s3Error(put())).toBe('no error');
      await new Promise((r) => setTimeout(r, 1100));
      expect(await s3Error(put())).toBe('ExpiredToken');
      client.destroy();
    } finally {
      s.admin.setStsExpireSeconds(3600);
    }
  });
});
