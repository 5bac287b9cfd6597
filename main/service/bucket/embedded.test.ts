import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { startEmbeddedBucket } from './embedded.js';
import type { BucketBackend } from './types.js';

// The embedded bucket over HTTP on loopback, on a real SQLite file, signed by the AWS SDK v3.

describe('the embedded bucket reads a credential once', () => {
  let dir: string;
  let db: Db;
  let bucket: BucketBackend;
  /** Statements run on bucket_credentials (the lookup of a request's access key). */
  let lookups = 0;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-embedded-'));
    db = openDatabase(path.join(dir, 'data'));
    db.prepare(
      'INSERT INTO workspaces (id, name, object_key_prefix, is_default, created_at) VALUES (?, ?, ?, 0, ?)',
    ).run('ws-1', 'Test', 'ws', Date.now());
    lookups = 0;
    // The real database; its prepared statements that read bucket_credentials are counted.
    const counting = new Proxy(db, {
      get(target, prop, receiver) {
        if (prop !== 'prepare') return Reflect.get(target, prop, receiver) as unknown;
        return (sql: string) => {
          const stmt = target.prepare(sql);
          if (!/SELECT[\s\S]*FROM bucket_credentials/.test(sql)) return stmt;
          return new Proxy(stmt, {
            get(st, name, r) {
              const v = Reflect.get(st, name, r) as unknown;
              if (name !== 'get' || typeof v !== 'function') return v;
              return (...args: unknown[]) => {
                lookups++;
                return (v as (...a: unknown[]) => unknown).apply(st, args);
              };
            },
          });
        };
      },
    });
    bucket = await startEmbeddedBucket({
      dataDir: dir,
      host: '127.0.0.1',
      db: counting,
      limits: { ...DEFAULT_LIMITS },
      log: null,
    });
  });
  afterEach(async () => {
    await bucket.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('for all the requests it signs, not once per request; an unknown key is still refused', async () => {
    const sts = await bucket.issue({ workspaceId: 'ws-1', prefix: 'ws', expireSeconds: 900 });
    const client = (secret: string) =>
      new S3Client({
        region: sts.region,
        endpoint: sts.endpoint,
        forcePathStyle: true,
        credentials: {
          accessKeyId: sts.credentials.access_key_id,
          secretAccessKey: secret,
          sessionToken: sts.credentials.security_token,
        },
      });
    const s3 = client(sts.credentials.access_key_secret);
    for (let i = 0; i < 5; i++)
      await s3.send(new PutObjectCommand({ Bucket: sts.bucket, Key: `ws/f${i}.jpg`, Body: `body ${i}` }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: sts.bucket, Key: 'ws/f3.jpg' }));
    expect(head.ContentLength).toBe('body 3'.length);
    expect(await bucket.objectInfo('ws/f4.jpg')).toMatchObject({ size: 'body 4'.length });
    expect(lookups).toBe(1); // 6 before: one per request
    // The cached credential still signs only with its own secret.
    await expect(
      client('wrong-secret').send(new HeadObjectCommand({ Bucket: sts.bucket, Key: 'ws/f3.jpg' })),
    ).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    s3.destroy();
  });
});
