import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import {
  bucketProblem,
  checkStorageSettings,
  endpointProblem,
  prefixProblem,
  regionProblem,
} from './settings.js';

describe('storage settings', () => {
  it('accepts what real servers send (AWS, MinIO, Ceph RGW, Alibaba OSS, the reference service)', () => {
    for (const b of ['media', 'cloud-bucket', 'drone.media', 'a1b', 'x'.repeat(63)])
      expect([b, bucketProblem('minio', b)]).toEqual([b, undefined]);
    for (const b of ['drone-media', 'abc', 'oss-1'])
      expect([b, bucketProblem('ali', b)]).toEqual([b, undefined]);
    for (const e of [
      'https://s3.us-east-1.amazonaws.com',
      'http://192.168.1.1:9000',
      'http://127.0.0.1:9000/',
      'http://[::1]:9000',
      'https://oss-cn-hangzhou.aliyuncs.com',
      'HTTPS://Gateway.example.com/s3/',
      '',
    ])
      expect([e, endpointProblem(e)]).toEqual([e, undefined]);
    for (const r of ['', 'us-east-1', 'oss-cn-hangzhou', 'default', 'cn_north_1'])
      expect([r, regionProblem(r)]).toEqual([r, undefined]);
    for (const p of ['', 'ws', 'ws/', 'crews/ws-1', 'ws//media', 'a b%c'])
      expect([p, prefixProblem(p)]).toEqual([p, undefined]);
  });

  it('refuses bucket names outside the S3 and OSS rules', () => {
    for (const b of [
      'ab',
      'x'.repeat(64),
      '../evil',
      'a..b',
      'Media',
      'a_b',
      '-ab',
      'ab-',
      '10.0.0.1',
      'xn--ab',
      'ab-s3alias',
      'a b',
      'a/b',
      'a%2fb',
    ])
      expect([b, bucketProblem('aws', b)]).toEqual([b, expect.stringContaining('is not an S3 bucket name')]);
    for (const b of ['drone.media', 'a_b', 'AB1'])
      expect([b, bucketProblem('ali', b)]).toEqual([
        b,
        expect.stringContaining('is not an Alibaba OSS bucket name'),
      ]);
  });

  it('names the first wrong field, quotes values escaped, and never quotes a user:password endpoint', () => {
    const good = {
      provider: 'minio' as const,
      bucket: 'media',
      endpoint: 'http://127.0.0.1:9000',
      region: 'us-east-1',
      objectKeyPrefix: 'ws',
    };
    expect(() => checkStorageSettings(good)).not.toThrow();
    const err = (() => {
      try {
        checkStorageSettings({ ...good, endpoint: 'http://admin:hunter2@127.0.0.1:9000' });
      } catch (e) {
        return e as DmsError;
      }
      throw new Error('accepted');
    })();
    expect(err).toBeInstanceOf(DmsError);
    expect([err.kind, err.retryable]).toEqual(['malformed-response', false]);
    expect(err.message).toBe(
      "The server's storage settings are wrong: endpoint contains a user name or password (user@host). Nothing was sent to the bucket.",
    );
    expect(err.message).not.toContain('hunter2');
    expect(() => checkStorageSettings({ ...good, bucket: '\u202eevil' })).toThrow(/bucket "\\u202eevil"/);
  });
});
