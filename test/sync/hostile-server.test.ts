/**
 * Issue 22, "where bytes may go": the agent against a server that speaks the
 * contract but answers hostile storage settings and deeply nested JSON
 * (test/support/hostile-server.ts: the real service and bucket behind
 * recording proxies). The bucket proxy sees every request the agent makes
 * to a bucket: where the settings are wrong, it must see none.
 */
import { syncLanes } from '../../main/core/sync/peers.js';
import { visible } from '../../main/shared/visible.js';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StsResult } from '../../main/core/api/types.js';
import { plainMessage, type DmsError } from '../../main/core/errors.js';
import { Queue } from '../../main/core/queue/queue.js';
import { parseConfig } from '../../main/core/config.js';
import { createUploader } from '../../main/core/storage/index.js';
import type { BucketTarget, Uploader } from '../../main/core/storage/types.js';
import { failure, makeCard, syncOnce, tempDir } from '../support/harness.js';
import {
  ESCAPE_MESSAGE,
  hostile,
  startHostileServer,
  type HostileServer,
} from '../support/hostile-server.js';

let h: HostileServer;
let dir: string;
let realSts: StsResult;
beforeAll(async () => {
  h = await startHostileServer();
  dir = tempDir('dms-hostile-test-');
  realSts = await h.client().getSts();
});
afterEach(() => h.clear());
afterAll(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Bucket requests seen from now on. */
function bucketRequestsAfter<T>(fn: () => Promise<T>): Promise<{ result: T; seen: string[] }> {
  const before = h.bucket.records.length;
  return fn().then((result) => ({
    result,
    seen: h.bucket.records.slice(before).map((r) => `${r.method} ${r.path}`),
  }));
}

/** A target as the STS cache builds it from the (real) answer, with fields replaced. */
function target(fields: Partial<BucketTarget> = {}): BucketTarget {
  return {
    provider: realSts.provider,
    bucket: realSts.bucket,
    endpoint: realSts.endpoint,
    region: realSts.region,
    objectKeyPrefix: realSts.object_key_prefix,
    credentials: {
      accessKeyId: realSts.credentials.access_key_id,
      secretAccessKey: realSts.credentials.access_key_secret,
      sessionToken: realSts.credentials.security_token,
      expiresAt: Date.now() + 3600_000,
    },
    ...fields,
  };
}

function uploaderFor(t: BucketTarget, opts: { multipartThreshold?: number } = {}): Uploader {
  return createUploader(t.provider, { target: () => Promise.resolve(t), ...opts });
}

describe('A1. storage settings are checked before the first byte', () => {
  it('an STS answer with bucket ../evil: nothing reaches any bucket, every file fails saying which setting is wrong', async () => {
    h.answer('sts', hostile.stsWith({ bucket: '../evil' }));
    const card = makeCard(path.join(dir, 'card-evil'));
    const { result, seen } = await bucketRequestsAfter(() =>
      syncOnce({ queueFile: path.join(dir, 'evil.db'), api: h.client(), roots: [card] }),
    );
    expect(seen).toEqual([]);
    const failed = result.events.filter((e) => e.outcome === 'failed');
    expect(failed.length).toBe(result.events.length);
    expect(failed.length).toBeGreaterThan(0);
    for (const e of failed) {
      expect(e.error?.message).toMatch(
        /storage settings are wrong.*bucket "\.\.\/evil" is not an S3 bucket name/,
      );
    }
  });

  // Each value is refused when the STS answer is read, with the field named; none is retried by itself.
  const HOSTILE: Array<[string, Record<string, string>, RegExp]> = [
    ['bucket with a slash', { bucket: 'media/../other' }, /bucket "media\/\.\.\/other"/],
    ['bucket that is an IP address', { bucket: '192.168.1.1' }, /bucket "192\.168\.1\.1"/],
    ['bucket in capitals', { bucket: 'Media' }, /bucket "Media"/],
    ['bucket with a control character', { bucket: 'med\u001bia' }, /bucket "med\\u001bia"/],
    ['ftp endpoint', { endpoint: 'ftp://127.0.0.1:21' }, /endpoint "ftp:" is not allowed/],
    ['file endpoint', { endpoint: 'file:///etc/passwd' }, /endpoint "file:" is not allowed/],
    [
      'endpoint with a user name',
      { endpoint: 'http://user:secret@127.0.0.1:9' },
      /endpoint contains a user name/,
    ],
    [
      'endpoint with a dot segment',
      { endpoint: 'http://127.0.0.1:9/a/../b' },
      /endpoint path "\/a\/\.\.\/b"/,
    ],
    ['endpoint with an escaped slash', { endpoint: 'http://127.0.0.1:9/%2e%2e%2fx' }, /endpoint path/],
    ['endpoint with a query', { endpoint: 'http://127.0.0.1:9/?x=1' }, /endpoint has a query/],
    [
      'endpoint with a newline',
      { endpoint: 'http://127.0.0.1:9\n.evil.example' },
      /endpoint contains spaces, control/,
    ],
    [
      'endpoint with a backslash',
      { endpoint: 'http://evil.example\\@127.0.0.1:9' },
      /endpoint contains spaces, control/,
    ],
    ['endpoint without a host', { endpoint: 'http:///x' }, /endpoint "http:\/\/\/x" names no plain host/],
    ['endpoint with an escaped host', { endpoint: 'http://127.0.0.1%2f.evil:9' }, /names no plain host/],
    ['region with a slash', { region: 'us-east-1/../x' }, /region "us-east-1\/\.\.\/x"/],
    ['region with CR/LF', { region: 'us-east-1\r\nx-evil: 1' }, /region "us-east-1\\u000d\\u000ax-evil: 1"/],
    [
      'prefix climbing out',
      { object_key_prefix: '../../etc' },
      /object_key_prefix "\.\.\/\.\.\/etc" climbs out/,
    ],
    ['prefix with a dot segment inside', { object_key_prefix: 'ws/./../x' }, /object_key_prefix/],
  ];
  it.each(HOSTILE)('refuses an STS answer with a %s', async (_what, fields, message) => {
    h.answer('sts', hostile.stsWith(fields));
    const err = await failure(h.client().getSts());
    expect(err.kind).toBe('malformed-response');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^The server's storage settings are wrong \(the answer to POST \/storage\//);
    expect(err.message).toMatch(message);
    expect(err.message).toContain('Nothing was sent to the bucket.');
    expect(plainMessage(err)).toMatch(/Ask the server's administrator to correct them/);
    // The secret of a user:secret@ endpoint and the credentials are never quoted.
    expect(err.message).not.toContain('secret');
    expect(err.message).not.toContain(realSts.credentials.access_key_secret);
  });

  it('Alibaba OSS names are checked with its own rules (no dots), S3 names with S3 rules', async () => {
    h.answer('sts', hostile.stsWith({ bucket: 'drone.media' }));
    expect((await h.client().getSts()).bucket).toBe('drone.media'); // minio: a valid S3 name
    h.clear();
    h.answer(
      'sts',
      hostile.rewrite((a) => ({
        ...a,
        data: { ...(a.data as object), provider: 'ali', bucket: 'drone.media' },
      })),
    );
    const err = await failure(h.client().getSts());
    expect(err.message).toMatch(/bucket "drone\.media" is not an Alibaba OSS bucket name/);
  });

  it('an uploader given a hostile target directly (not from an STS answer) sends nothing either', async () => {
    const small = path.join(dir, 'small.bin');
    fs.writeFileSync(small, 'x'.repeat(1000));
    for (const fields of [
      { bucket: '../evil' },
      { endpoint: `${realSts.endpoint}/..%2Fevil` },
      { region: 'a/b' },
    ]) {
      const up = uploaderFor(target(fields));
      try {
        const { result: err, seen } = await bucketRequestsAfter(() =>
          failure(
            up.upload({ filePath: small, size: 1000, key: `${realSts.object_key_prefix}/x/small.bin` }),
          ),
        );
        expect(seen).toEqual([]);
        expect(err.message).toMatch(/^The server's storage settings are wrong: (bucket|endpoint|region) /);
      } finally {
        up.close();
      }
    }
  });
});

describe('A2. every object the agent writes stays under the prefix', () => {
  const manifest = Buffer.from('{"verdict":"safe"}');
  const md5Hex = createHash('md5').update(manifest).digest('hex');
  /** The key SyncEngine.publish() builds by hand today (engine.ts): `${prefix without trailing /}/${folder}/${rel}`. */
  const publishKey = (prefix: string) =>
    `${prefix.replace(/\/+$/, '')}/manifests/card-0123456789/report.json`;

  it('a manifest under a prefix of ../../etc is refused by the uploader itself: nothing reaches PUT /etc/manifests/...', async () => {
    const t = target({ objectKeyPrefix: '../../etc' });
    const up = uploaderFor(t);
    try {
      const { result: err, seen } = await bucketRequestsAfter(() =>
        failure(
          up.upload({
            filePath: '',
            size: manifest.length,
            key: publishKey(t.objectKeyPrefix),
            md5Hex,
            content: manifest,
          }),
        ),
      );
      expect(seen).toEqual([]);
      expect(err.message).toMatch(/object_key_prefix "\.\.\/\.\.\/etc" climbs out of the workspace's folder/);
      expect(err.retryable).toBe(false);
    } finally {
      up.close();
    }
  });

  it('keys that climb out of a good prefix, or lie outside it, are refused for single PUT, multipart and HEAD', async () => {
    const prefix = realSts.object_key_prefix;
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(6 * 1024 * 1024, 7));
    const up = uploaderFor(target(), { multipartThreshold: 5 * 1024 * 1024 });
    try {
      const bad = [
        `${prefix}/../../etc/manifests/report.json`,
        `${prefix}/a/../../other/x.jpg`,
        `${prefix}//x.jpg`,
        `${prefix}/x\u0000.jpg`,
        `other-workspace/x.jpg`,
        `${prefix}x/escape.jpg`,
      ];
      const { result, seen } = await bucketRequestsAfter(async () => {
        const errors: DmsError[] = [];
        for (const key of bad) {
          errors.push(
            await failure(up.upload({ filePath: '', size: manifest.length, key, md5Hex, content: manifest })),
          );
          errors.push(await failure(up.upload({ filePath: big, size: 6 * 1024 * 1024, key })));
          errors.push(await failure(up.exists(key)));
        }
        return errors;
      });
      expect(seen).toEqual([]);
      for (const err of result) {
        expect(err.kind).toBe('invalid-input');
        expect(err.message).toMatch(
          /^Refused to write the object ".*": it (is not under the workspace's folder|has an empty, \. or \.\. segment|contains control characters)/,
        );
      }
      // The same uploader still writes where it should.
      const ok = await up.upload({
        filePath: '',
        size: manifest.length,
        key: publishKey(prefix),
        md5Hex,
        content: manifest,
      });
      expect(ok.key).toBe(`${prefix}/manifests/card-0123456789/report.json`);
      expect(await up.exists(ok.key)).toBe(true);
    } finally {
      up.close();
    }
  });

  it('the manifest written through the bucket port (put), prefix ../../etc: refused, nothing reaches the bucket', async () => {
    h.answer('sts', hostile.stsWith({ object_key_prefix: '../../etc' }));
    const queue = new Queue(path.join(dir, 'publish.db'));
    const engine = syncLanes({ queue, api: h.client(), config: parseConfig({}) }).engine;
    try {
      const { result: err, seen } = await bucketRequestsAfter(() =>
        failure(engine.bucket.put('manifests/card-0123456789', 'report.json', manifest, 'application/json')),
      );
      expect(seen).toEqual([]);
      expect(err.message).toMatch(/object_key_prefix "\.\.\/\.\.\/etc"/);
    } finally {
      engine.close();
      queue.close();
    }
  });
});

describe('A3. deeply nested answers', () => {
  it('waylines nested 10^5 levels deep: a malformed-response with a clear message, not an upload problem', async () => {
    h.answer('waylines', hostile.waylinesNested(100_000));
    const err = await failure(h.client().listWaylines({ order_by: 'name asc' }));
    expect(err.kind).toBe('malformed-response');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(
      /^The server sent an answer that cannot be valid \(nested more than 64 levels deep\)/,
    );
    expect(plainMessage(err)).not.toMatch(/upload/i);
    expect(plainMessage(err)).toMatch(/not used/);
  });

  it('a listing that fails otherwise is not reported as an upload problem either', async () => {
    for (const answer of [
      hostile.reply('{"code":0,"message":"success","data":{"list":"not a list"}}'),
      hostile.reply('<html>proxy</html>', 500),
      hostile.message('no such thing', 123),
    ]) {
      h.answer('waylines', answer, 1);
      const err = await failure(h.client().listWaylines({ order_by: 'name asc' }));
      expect(plainMessage(err)).not.toMatch(/upload|this file/i);
      expect(plainMessage(err)).toMatch(/wayline/);
    }
  });

  it('a fast-upload answer nested 10^5 levels deep fails the file with that message, not "the server had a problem"', async () => {
    h.answer(
      'fast-upload',
      hostile.reply(`{"code":0,"message":"ok","data":${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
    );
    const card = makeCard(path.join(dir, 'card-deep'), 'DJI_202209021517_002_Deep', ['M30T/M30T_IR.JPG']);
    const { result, seen } = await bucketRequestsAfter(() =>
      syncOnce({ queueFile: path.join(dir, 'deep.db'), api: h.client(), roots: [card] }),
    );
    expect(seen).toEqual([]);
    expect(result.events.map((e) => [e.outcome, e.error?.kind])).toEqual([['failed', 'malformed-response']]);
    expect(result.events[0]?.error?.message).toMatch(/nested more than 64 levels deep/);
  });
});

describe('the hostile server itself (test/support/hostile-server.ts)', () => {
  it('answers what its knobs say, and the real service again once cleared', async () => {
    const api = h.client();
    const fp = 'f'.repeat(32);
    expect(await api.fastUpload({ fingerprint: fp })).toMatchObject({ known: false });
    h.answer('fast-upload', hostile.knownForEverything());
    expect(await api.fastUpload({ fingerprint: fp })).toEqual({ known: true });
    h.answer('fast-upload', hostile.message(ESCAPE_MESSAGE, 123), 1); // rules apply in order: the first still wins
    expect(await api.fastUpload({ fingerprint: fp })).toEqual({ known: true });
    h.clear();
    h.answer('fast-upload', hostile.message(ESCAPE_MESSAGE, 123), 1);
    expect(await api.fastUpload({ fingerprint: fp })).toEqual({
      known: false,
      code: 123,
      // The server's words enter the agent made visible (envelope.ts): never obeyed by a terminal.
      message: visible(ESCAPE_MESSAGE),
    });
    expect(await api.fastUpload({ fingerprint: fp })).toMatchObject({ known: false, code: 404001 });

    h.answer('sts', hostile.stsWithoutData());
    expect((await failure(api.getSts())).message).toMatch(/returned no storage credentials/);
    h.clear();
    expect((await api.getSts()).endpoint).toBe(h.bucket.url); // the bucket behind its recording proxy

    const other = `${realSts.object_key_prefix}/someone-else.jpg`;
    h.answer('upload-callback', hostile.callbackNaming(other));
    // (result 1: a failed upload, which the service records without an object)
    const input = { result: 1, name: 'mine.jpg', object_key: `${realSts.object_key_prefix}/x/mine.jpg` };
    expect(await api.uploadCallback(input as Parameters<typeof api.uploadCallback>[0])).toEqual({
      object_key: other,
    });
    expect(h.api.records.at(-1)?.forwarded).toBe(true); // the service did see the callback
  });
});
