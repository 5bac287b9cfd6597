import { describe, expect, it } from 'vitest';
import { CODES, validateExternalBucketConfig } from '../../main/service/index.js';
import { call, paths, startTemp } from './helpers.js';

const base = {
  provider: 'minio',
  endpoint: 'http://10.0.0.5:9000',
  region: 'us-east-1',
  bucket: 'drone-media',
  objectKeyPrefix: 'crews',
  accessKeyId: 'AKIAEXAMPLE',
  secretAccessKey: 'super-secret-value',
};

describe('externalBucket config validation', () => {
  it('accepts a MinIO config without a role and AWS/Alibaba configs with one', () => {
    expect(validateExternalBucketConfig(base)).toMatchObject({ provider: 'minio', bucket: 'drone-media' });
    const arn = 'arn:aws:iam::123456789012:role/dms-upload';
    expect(
      validateExternalBucketConfig({
        ...base,
        provider: 'aws',
        endpoint: 'https://s3.eu-west-1.amazonaws.com',
        roleArn: arn,
      }).roleArn,
    ).toBe(arn);
    expect(
      validateExternalBucketConfig({ ...base, provider: 'ali', roleArn: 'acs:ram::1:role/dms' }).provider,
    ).toBe('ali');
  });

  it.each([
    [{ provider: 'gcs' }, 'provider must be one of "aws", "minio", "ali".'],
    [{ endpoint: '10.0.0.5:9000' }, 'endpoint is not valid: must be an http:// or https:// URL.'],
    [{ bucket: 'Bad_Bucket' }, /^externalBucket: bucket is not valid: must be a valid bucket name/],
    [{ objectKeyPrefix: '/crews/' }, /^externalBucket: objectKeyPrefix is not valid/],
    [{ region: '' }, 'region must not be empty.'],
    [{ accessKeyId: undefined }, 'accessKeyId is required (string).'],
    [{ provider: 'aws' }, 'roleArn is not valid: roleArn is required for the aws and ali providers.'],
  ])('%j is refused', (change, message) => {
    const attempt = () => validateExternalBucketConfig({ ...base, ...change });
    expect(attempt).toThrow(typeof message === 'string' ? `externalBucket: ${message}` : message);
  });

  it('never puts the secret in its messages', () => {
    try {
      validateExternalBucketConfig({ ...base, bucket: 'X' });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).not.toContain(base.secretAccessKey);
    }
  });
});

describe('a service on an unreachable external bucket', () => {
  it('answers sts with HTTP 502 and a message naming the provider', async () => {
    // Port 9 on localhost: nothing listens, the connection is refused at once.
    const s = await startTemp({
      externalBucket: { ...base, provider: 'minio', endpoint: 'http://127.0.0.1:9' },
    });
    try {
      expect(s.bucket).toMatchObject({ name: 'drone-media', endpoint: 'http://127.0.0.1:9', dataDir: '' });
      expect(s.bucket.objectKeyPrefix).toBe(`crews/${s.workspaceId}`);
      const r = await call(s, 'POST', paths(s.workspaceId).sts);
      expect(r.status).toBe(502);
      expect(r.body.code).toBe(CODES.STORAGE_PROVIDER_FAILED);
      expect(r.body.message).toMatch(/^Could not get temporary credentials from the minio STS/);
      expect(r.body.message).not.toContain(base.secretAccessKey);
    } finally {
      await s.stop();
    }
  });
});
