import { createHook } from 'node:async_hooks';
import { createHash, createHmac, KeyObject } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { startEmbeddedBucket } from './embedded.js';
import { checkRead, checkWrite, readConditions } from './s3-conditions.js';
import { compareKeys, prefixEnd, walk } from './s3-list.js';
import { S3Error } from './s3-protocol.js';
import { signingKey } from './sigv4.js';
import { BucketStore, SMALL_BODY_BYTES } from './store.js';
import type { BucketBackend } from './types.js';

// Unit tests beside the embedded bucket's server: its conditions and its
// listing walk, on a real SQLite file and real files. The server over HTTP,
// and third parties' clients against it, are in test/service/bucket-*.

const ETAG = '9e107d9d372bb6826bd81d3542a419d6';
const AT = Date.parse('2026-11-25T12:00:00Z');
const obj = { etag: ETAG, lastModified: AT };
const httpDate = (ms: number) => new Date(ms).toUTCString();

function refused(fn: () => unknown): { status: number; code: string } | null {
  try {
    fn();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(S3Error);
    const e = err as S3Error;
    return { status: e.status, code: e.code };
  }
}

/** The real database; the get() calls of the statements whose SQL matches `sql` are counted as they run. */
function countingGets(db: Db, sql: RegExp): { db: Db; counts: () => number } {
  let n = 0;
  const wrap = (stmt: object) =>
    new Proxy(stmt, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (prop === 'get') n++;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const proxy = new Proxy(db, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop);
      if (prop === 'prepare')
        return (text: string) => {
          const stmt = target.prepare(text);
          return sql.test(text) ? wrap(stmt) : stmt;
        };
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db: proxy, counts: () => n };
}

/** A real service database in `dir`/data with the workspace ws-1 (prefix ws). */
function openWorkspaceDb(dir: string): Db {
  const db = openDatabase(path.join(dir, 'data'));
  db.prepare(
    'INSERT INTO workspaces (id, name, object_key_prefix, is_default, created_at) VALUES (?, ?, ?, 0, ?)',
  ).run('ws-1', 'Test', 'ws', Date.now());
  return db;
}

/** A temp folder with a real service database (openWorkspaceDb), made before each test, removed after. */
function tempWorkspaceDb(name: string): { dir: () => string; db: () => Db } {
  let dir = '';
  let db: Db | undefined;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `dms-bucket-${name}-`));
    db = openWorkspaceDb(dir);
  });
  afterEach(() => {
    db?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { dir: () => dir, db: () => db! };
}

/**
 * An object written through the store as a PUT does: its body (by default its key) in chunks
 * of 16 KiB with its declared length.
 */
async function putInto(store: BucketStore, key: string, body = Buffer.from(key)): Promise<void> {
  const chunks = Array.from({ length: Math.ceil(body.length / 16384) }, (_, i) =>
    body.subarray(i * 16384, (i + 1) * 16384),
  );
  const got = await store.receive(Readable.from(chunks), undefined, body.length);
  expect(got.size).toBe(body.length);
  expect(got.md5.equals(createHash('md5').update(body).digest())).toBe(true);
  const md5 = got.md5.toString('hex');
  await store.commitObject('ws-1', key, got.tmp, {
    size: got.size,
    md5,
    etag: md5,
    contentType: null,
    headers: {},
  });
}

describe('conditional reads (RFC 9110 §13.2.2 order)', () => {
  const cases: Array<[string, Record<string, string>, 'send' | 'not-modified' | 412]> = [
    ['no condition', {}, 'send'],
    ['If-Match the ETag (quoted)', { 'if-match': `"${ETAG}"` }, 'send'],
    ['If-Match *', { 'if-match': '*' }, 'send'],
    ['If-Match another ETag', { 'if-match': '"abc"' }, 412],
    ['If-Match in a list, weak', { 'if-match': `"abc", W/"${ETAG}"` }, 'send'],
    ['If-None-Match the ETag', { 'if-none-match': `"${ETAG}"` }, 'not-modified'],
    ['If-None-Match another', { 'if-none-match': '"abc"' }, 'send'],
    ['If-Modified-Since later', { 'if-modified-since': httpDate(AT + 60_000) }, 'not-modified'],
    ['If-Modified-Since earlier', { 'if-modified-since': httpDate(AT - 60_000) }, 'send'],
    ['If-Modified-Since not a date (ignored)', { 'if-modified-since': 'yesterday' }, 'send'],
    ['If-Unmodified-Since earlier', { 'if-unmodified-since': httpDate(AT - 60_000) }, 412],
    ['If-Unmodified-Since later', { 'if-unmodified-since': httpDate(AT + 60_000) }, 'send'],
    // If-Match passes: If-Unmodified-Since is not looked at.
    [
      'If-Match wins over If-Unmodified-Since',
      { 'if-match': ETAG, 'if-unmodified-since': httpDate(AT - 60_000) },
      'send',
    ],
    // If-None-Match decides: If-Modified-Since is not looked at.
    [
      'If-None-Match wins over If-Modified-Since',
      { 'if-none-match': '"abc"', 'if-modified-since': httpDate(AT + 60_000) },
      'send',
    ],
  ];
  it.each(cases)('%s', (_name, headers, expected) => {
    const c = readConditions(headers);
    if (expected === 412)
      expect(refused(() => checkRead(c, obj))).toEqual({ status: 412, code: 'PreconditionFailed' });
    else expect(checkRead(c, obj)).toBe(expected);
  });
});

describe('conditional writes', () => {
  it('If-None-Match: * refuses to replace an object and lets a new key be written', () => {
    const c = readConditions({ 'if-none-match': '*' });
    expect(refused(() => checkWrite(c, obj))).toEqual({ status: 412, code: 'PreconditionFailed' });
    expect(refused(() => checkWrite(c, undefined))).toBeNull();
  });
  it('If-Match needs the object (404 without it) with a listed ETag (412 otherwise)', () => {
    expect(refused(() => checkWrite(readConditions({ 'if-match': ETAG }), undefined))).toEqual({
      status: 404,
      code: 'NoSuchKey',
    });
    expect(refused(() => checkWrite(readConditions({ 'if-match': '"abc"' }), obj))).toEqual({
      status: 412,
      code: 'PreconditionFailed',
    });
    expect(refused(() => checkWrite(readConditions({ 'if-match': `"${ETAG}"` }), obj))).toBeNull();
  });
  it('repeated headers are read as one list', () => {
    expect(readConditions({ 'if-none-match': ['"a"', '"b"'] })).toEqual({ ifNoneMatch: '"a","b"' });
  });
});

describe('key order and prefix ends', () => {
  it('orders keys by UTF-8 bytes, as S3 does', () => {
    const keys = ['é', 'z', 'DCIM/', 'DCIM0', 'DCIM', '\u{1F600}', '\uFFFD'];
    expect([...keys].sort(compareKeys)).toEqual(['DCIM', 'DCIM/', 'DCIM0', 'z', 'é', '\uFFFD', '\u{1F600}']);
  });
  it('gives the smallest string above every key under a prefix', () => {
    expect(prefixEnd('a/b/')).toBe('a/b0');
    expect(prefixEnd('ws/\uD7FF')).toBe('ws/\uE000');
    expect(prefixEnd('a\u{10FFFF}')).toBe('b');
    expect(prefixEnd('\u{10FFFF}')).toBeUndefined();
  });
});

describe('the listing walk on a real store', () => {
  let dir: string;
  let db: Db;
  let store: BucketStore;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-bucket-unit-'));
    db = openWorkspaceDb(dir);
    store = new BucketStore(path.join(dir, 'bucket'), db, {
      maxObjectsPerWorkspace: 10_000,
      maxOpenUploadsPerWorkspace: 10,
    });
  });
  afterEach(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const put = (key: string) => putInto(store, key);
  const names = (prefix: string, delimiter: string, marker: string) =>
    [...walk(store, prefix, delimiter, marker)].map((e) => (e.row ? e.name : `[${e.name}]`));

  it('never loses a key beside a common prefix (DCIM0 beside DCIM/)', async () => {
    for (const k of [
      'ws/DCIM/a.jpg',
      'ws/DCIM/b.jpg',
      'ws/DCIM0',
      'ws/DCIM.txt',
      'ws/DCIM/sub/c.jpg',
      'ws/z',
    ])
      await put(k);
    expect(names('ws/', '/', '')).toEqual(['ws/DCIM.txt', '[ws/DCIM/]', 'ws/DCIM0', 'ws/z']);
    expect(names('ws/', '', '')).toEqual([
      'ws/DCIM.txt',
      'ws/DCIM/a.jpg',
      'ws/DCIM/b.jpg',
      'ws/DCIM/sub/c.jpg',
      'ws/DCIM0',
      'ws/z',
    ]);
    expect(names('ws/DCIM/', '/', '')).toEqual(['ws/DCIM/a.jpg', 'ws/DCIM/b.jpg', '[ws/DCIM/sub/]']);
  });

  it('goes on after a marker: keys after it, a common prefix at or before it never twice', async () => {
    for (const k of ['ws/a', 'ws/b/1', 'ws/b/2', 'ws/c']) await put(k);
    expect(names('ws/', '/', 'ws/a')).toEqual(['[ws/b/]', 'ws/c']);
    expect(names('ws/', '/', 'ws/b/')).toEqual(['ws/c']);
    expect(names('ws/', '/', 'ws/b/1')).toEqual(['ws/c']);
    expect(names('ws/', '', 'ws/b/1')).toEqual(['ws/b/2', 'ws/c']);
  });

  it('walks more keys than one batch of the store', async () => {
    const keys = Array.from({ length: 1203 }, (_, i) => `ws/k/${String(i).padStart(5, '0')}`);
    for (const k of keys) await put(k);
    await put('ws/l');
    expect(names('ws/', '', '')).toEqual([...keys, 'ws/l']);
    expect(names('ws/', '/', '')).toEqual(['[ws/k/]', 'ws/l']);
  });

  it('leaves out an object whose file is gone (and forgets its row)', async () => {
    await put('ws/a');
    await put('ws/b');
    const gone = store.object('ws/a')!;
    fs.rmSync(gone.path);
    expect(names('ws/', '', '')).toEqual(['ws/b']);
    expect(db.prepare('SELECT count(*) AS n FROM bucket_objects').get()).toEqual({ n: 1 });
  });
});

describe('the object limit of a workspace, on a real store', () => {
  let dir: string;
  let db: Db;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-bucket-room-'));
    db = openWorkspaceDb(dir);
  });
  afterEach(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const counting = () => countingGets(db, /count\(\*\)/i);

  it('counts the objects once, not at every PUT (a scan of the workspace each time)', async () => {
    const c = counting();
    const store = new BucketStore(path.join(dir, 'bucket'), c.db, {
      maxObjectsPerWorkspace: 1000,
      maxOpenUploadsPerWorkspace: 10,
    });
    for (let i = 0; i < 20; i++) await putInto(store, `ws/k${i}`);
    expect(c.counts()).toBe(1);
  });

  it('still refuses the object past the limit, and takes it once one is gone (its file deleted by hand)', async () => {
    const store = new BucketStore(path.join(dir, 'bucket'), db, {
      maxObjectsPerWorkspace: 3,
      maxOpenUploadsPerWorkspace: 10,
    });
    for (const k of ['ws/a', 'ws/b', 'ws/c']) await putInto(store, k);
    await expect(putInto(store, 'ws/d')).rejects.toThrow(/already holds 3 objects/);
    await putInto(store, 'ws/a'); // a replacement adds nothing
    // An operator frees space: the file goes, the row is dropped when met.
    fs.rmSync(store.object('ws/b')!.path);
    expect(store.object('ws/b')).toBeUndefined();
    await putInto(store, 'ws/d');
    expect(store.object('ws/d')).toBeDefined();
    await expect(putInto(store, 'ws/e')).rejects.toThrow(/already holds 3 objects/);
    // The workspace's folder deleted by hand (as the bench does): the next object makes it again.
    fs.rmSync(path.join(dir, 'bucket', 'objects', 'ws-1'), { recursive: true });
    await putInto(store, 'ws/a');
    expect(fs.readFileSync(store.object('ws/a')!.path, 'utf8')).toBe('ws/a');
  });
});

describe('SigV4 signing keys', () => {
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
  it('are derived once per secret and scope (four HMACs per request before), and never shared between secrets', () => {
    const scope = '20261128/us-east-1/s3/aws4_request';
    const first = signingKey('secret-a', scope);
    const derived = hmac(hmac(hmac(hmac('AWS4secret-a', '20261128'), 'us-east-1'), 's3'), 'aws4_request');
    // A KeyObject: an HMAC given a Buffer key makes a KeyObject of its own, on every request.
    expect(first).toBeInstanceOf(KeyObject);
    expect(first.export().equals(derived)).toBe(true);
    expect(signingKey('secret-a', scope)).toBe(first); // the same key: not derived again
    expect(signingKey('secret-b', scope).equals(first)).toBe(false);
    expect(signingKey('secret-a', '20261129/us-east-1/s3/aws4_request').equals(first)).toBe(false);
  });
});

describe('writing a body', () => {
  const t = tempWorkspaceDb('body');

  /** Requests handed to libuv's thread pool (fs callbacks and promises) while `fn` runs. */
  async function poolRequests(fn: () => Promise<void>): Promise<number> {
    let n = 0;
    const hook = createHook({
      init: (_id, type) => {
        if (type === 'FSREQCALLBACK' || type === 'FSREQPROMISE') n++;
      },
    }).enable();
    try {
      await fn();
    } finally {
      hook.disable();
    }
    return n;
  }

  it('writes a small body in one call, not through the thread pool (open, write, close, rename each before)', async () => {
    const store = new BucketStore(path.join(t.dir(), 'bucket'), t.db(), {
      maxObjectsPerWorkspace: 100,
      maxOpenUploadsPerWorkspace: 10,
    });
    const body = Buffer.alloc(64 * 1024, 7);
    await putInto(store, 'ws/first', body); // makes the workspace's folder
    expect(await poolRequests(() => putInto(store, 'ws/a', body))).toBe(0);
    expect(fs.readFileSync(store.object('ws/a')!.path).equals(body)).toBe(true);
    // Bigger than SMALL_BODY_BYTES: streamed to its file as before, never held whole in memory.
    const big = Buffer.alloc(SMALL_BODY_BYTES + 1, 9);
    expect(await poolRequests(() => putInto(store, 'ws/big', big))).toBeGreaterThan(0);
    expect(fs.readFileSync(store.object('ws/big')!.path).equals(big)).toBe(true);
    // A small body longer than declared is not kept beyond what was declared: the caller refuses it by its size.
    const got = await store.receive(Readable.from([body, body]), undefined, body.length);
    expect(got.size).toBe(2 * body.length);
    expect(fs.statSync(got.tmp).size).toBe(body.length);
    expect(fs.readdirSync(path.join(t.dir(), 'bucket', 'tmp'))).toEqual([path.basename(got.tmp)]);
  });
});

// The embedded bucket over HTTP on loopback, on a real SQLite file, signed by the AWS SDK v3.
describe('the embedded bucket reads a credential once', () => {
  let dir: string;
  let db: Db;
  let bucket: BucketBackend;
  /** Lookups of a request's access key in bucket_credentials. */
  let lookups: () => number;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-embedded-'));
    db = openWorkspaceDb(dir);
    const c = countingGets(db, /FROM bucket_credentials/);
    lookups = c.counts;
    bucket = await startEmbeddedBucket({
      dataDir: dir,
      host: '127.0.0.1',
      db: c.db,
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
    expect(lookups()).toBe(1); // 6 before: one per request
    // The cached credential still signs only with its own secret.
    await expect(
      client('wrong-secret').send(new HeadObjectCommand({ Bucket: sts.bucket, Key: 'ws/f3.jpg' })),
    ).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    s3.destroy();
  });
});
