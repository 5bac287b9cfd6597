/**
 * A self-hosted bucket behind a private CA (MinIO on a ground-station
 * network): a real s3rver serving HTTPS with a certificate from a throw-away
 * CA. Refused, saying it is the certificate, until that CA is configured;
 * then small and multipart uploads go through, and another CA is still refused.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DmsError } from '../../main/core/errors.js';
import { createUploader } from '../../main/core/storage/index.js';
import { trustedCas } from '../../main/core/tls.js';
import { makeTestCa } from '../support/certs.js';
import { BUCKET, MiB, fixedTarget, makeFile, startS3rver, tempDir } from './harness.js';
import type { S3rverHandle, TempFile } from './harness.js';

let s3: S3rverHandle;
let dir: string;
let caPem: string;
let small: TempFile;
let big: TempFile;

beforeAll(async () => {
  dir = await tempDir();
  const ca = makeTestCa(dir);
  caPem = ca.caPem;
  s3 = await startS3rver({ key: ca.key, cert: ca.cert });
  small = await makeFile(dir, 'small.jpg', 200 * 1024 + 3);
  big = await makeFile(dir, 'big.mp4', 12 * MiB + 5);
});

afterAll(async () => {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

/** The object's bytes as s3rver stored them on disk. */
async function storedMd5(key: string): Promise<string> {
  const body = await readFile(path.join(s3.directory, BUCKET, `${key}._S3rver_object`));
  return createHash('md5').update(body).digest('hex');
}

describe('S3 uploader over HTTPS with a private CA', () => {
  it('refuses the bucket while its CA is not trusted, saying the certificate was rejected', async () => {
    expect(s3.endpoint.startsWith('https://')).toBe(true);
    const up = createUploader('minio', { target: fixedTarget(s3.endpoint) });
    const err = await up
      .upload({ filePath: small.path, size: small.size, key: 'ws/tls/no-ca.jpg' })
      .catch((e: unknown) => e);
    up.close();
    expect(err).toBeInstanceOf(DmsError);
    expect((err as DmsError).kind).toBe('network');
    expect((err as DmsError).message).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|CERT|ERR_TLS/);
  });

  it('uploads single-PUT and multipart files once the CA is configured', async () => {
    const up = createUploader('minio', {
      target: fixedTarget(s3.endpoint),
      ca: trustedCas(caPem),
      partSize: 5 * MiB,
      multipartThreshold: 8 * MiB,
    });
    const a = await up.upload({
      filePath: small.path,
      size: small.size,
      key: 'ws/tls/small.jpg',
      md5Hex: small.md5Hex,
    });
    const b = await up.upload({ filePath: big.path, size: big.size, key: 'ws/tls/big.mp4' });
    up.close();
    expect(a.multipart).toBe(false);
    expect(b.multipart).toBe(true);
    expect(await storedMd5('ws/tls/small.jpg')).toBe(small.md5Hex);
    expect(await storedMd5('ws/tls/big.mp4')).toBe(big.md5Hex);
  });

  it('still refuses it when the configured CA is another one', async () => {
    const otherDir = path.join(dir, 'other');
    await mkdir(otherDir);
    const other = makeTestCa(otherDir);
    const up = createUploader('minio', { target: fixedTarget(s3.endpoint), ca: trustedCas(other.caPem) });
    const err = await up
      .upload({ filePath: small.path, size: small.size, key: 'ws/tls/other.jpg' })
      .catch((e: unknown) => e);
    up.close();
    expect((err as DmsError).kind).toBe('network');
  });
});
