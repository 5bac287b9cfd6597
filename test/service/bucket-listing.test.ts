/**
 * Listings of the embedded bucket lose no key and show none twice, whatever
 * sorts next to the delimiter and wherever a page ends: ListObjects v1
 * (marker / NextMarker) and ListObjectsV2 (continuation token, start-after)
 * through the AWS SDK v3, compared with a listing made the plain way (all
 * keys sorted by UTF-8 bytes, folded at the delimiter, each common prefix
 * once). The names are those that broke it: `DCIM0` next to the common
 * prefix `DCIM/`, `a/`, `a0`, `a.`, `a-`, `a~`, multibyte names, a
 * delimiter other than "/". Also the cases of ceph/s3-tests on max-keys=0
 * and fetch-owner.
 */
import {
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSts, s3From, startTemp, type Loose } from './helpers.js';
import { rawS3 } from './s3-raw.js';

let s: Awaited<ReturnType<typeof startTemp>>;
let sts: Loose;
let client: S3Client;
let base: string;

/** Relative to `base`. */
const NAMES = [
  'DCIM/100MEDIA/DJI_0001.JPG',
  'DCIM/100MEDIA/DJI_0002.JPG',
  'DCIM/DJI_0003.JPG',
  'DCIM0',
  'DCIM1.txt',
  'a',
  'a-',
  'a.',
  'a/',
  'a/b',
  'a/c/d',
  'a0',
  'a~',
  'aé',
  'é/1',
  'é/2',
  'é0',
  'é.',
  '🚁/x',
  '🚁0',
  'z a/b',
  'z a0',
];

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The listing made the plain way: every key in order, folded at the delimiter, each common prefix once. */
function expected(prefix: string, delimiter: string): { keys: string[]; prefixes: string[]; all: string[] } {
  const all: string[] = [];
  const keys: string[] = [];
  const prefixes: string[] = [];
  for (const key of NAMES.map((n) => `${base}${n}`).sort(utf8Order)) {
    if (!key.startsWith(prefix)) continue;
    const cut = delimiter === '' ? -1 : key.indexOf(delimiter, prefix.length);
    if (cut < 0) {
      keys.push(key);
      all.push(key);
      continue;
    }
    const common = key.slice(0, cut + delimiter.length);
    if (all.at(-1) !== common) {
      prefixes.push(common);
      all.push(common);
    }
  }
  return { keys, prefixes, all };
}

interface Listed {
  keys: string[];
  prefixes: string[];
  pages: number;
}

async function listV1(prefix: string, delimiter: string, maxKeys: number): Promise<Listed> {
  const out: Listed = { keys: [], prefixes: [], pages: 0 };
  let marker: string | undefined;
  for (;;) {
    const page = await client.send(
      new ListObjectsCommand({
        Bucket: sts.bucket,
        Prefix: prefix,
        ...(delimiter ? { Delimiter: delimiter } : {}),
        MaxKeys: maxKeys,
        ...(marker !== undefined ? { Marker: marker } : {}),
      }),
    );
    out.pages++;
    const keys = (page.Contents ?? []).map((o) => o.Key!);
    const prefixes = (page.CommonPrefixes ?? []).map((p) => p.Prefix!);
    out.keys.push(...keys);
    out.prefixes.push(...prefixes);
    expect(keys.length + prefixes.length).toBeLessThanOrEqual(maxKeys);
    if (!page.IsTruncated) return out;
    // As S3 documents: NextMarker with a delimiter, the last key without one.
    marker = delimiter ? page.NextMarker : keys.at(-1);
    expect(marker).toBeDefined();
    expect(out.pages).toBeLessThan(100);
  }
}

async function listV2(
  prefix: string,
  delimiter: string,
  maxKeys: number,
  startAfter?: string,
): Promise<Listed> {
  const out: Listed = { keys: [], prefixes: [], pages: 0 };
  let token: string | undefined;
  for (;;) {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: sts.bucket,
        Prefix: prefix,
        ...(delimiter ? { Delimiter: delimiter } : {}),
        MaxKeys: maxKeys,
        ...(token !== undefined ? { ContinuationToken: token } : {}),
        ...(startAfter !== undefined ? { StartAfter: startAfter } : {}),
      }),
    );
    out.pages++;
    out.keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    out.prefixes.push(...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
    expect(page.KeyCount).toBe((page.Contents?.length ?? 0) + (page.CommonPrefixes?.length ?? 0));
    if (!page.IsTruncated) return out;
    token = page.NextContinuationToken;
    expect(token).toBeDefined();
    expect(out.pages).toBeLessThan(100);
  }
}

beforeAll(async () => {
  s = await startTemp();
  sts = await getSts(s);
  client = s3From(sts);
  base = `${sts.object_key_prefix}/edge/`;
  for (const name of NAMES) {
    await client.send(new PutObjectCommand({ Bucket: sts.bucket, Key: `${base}${name}`, Body: name }));
  }
});
afterAll(async () => {
  client.destroy();
  await s.stop();
});

describe('a listing with the delimiter "/"', () => {
  it('shows DCIM0 and DCIM1.txt beside the common prefix DCIM/, on one page', async () => {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: sts.bucket, Prefix: base, Delimiter: '/' }),
    );
    const rel = (k: string): string => k.slice(base.length);
    expect(page.CommonPrefixes?.map((p) => rel(p.Prefix!))).toEqual(['DCIM/', 'a/', 'z a/', 'é/', '🚁/']);
    expect(page.Contents?.map((o) => rel(o.Key!))).toEqual([
      'DCIM0',
      'DCIM1.txt',
      'a',
      'a-',
      'a.',
      'a0',
      'a~',
      'aé',
      'z a0',
      'é.',
      'é0',
      '🚁0',
    ]);
  });

  it('continues after a common prefix with the key that sorts right after it (v1 and v2, every page size)', async () => {
    const want = expected(base, '/');
    for (const maxKeys of [1, 2, 3, 4, 7, 1000]) {
      for (const [version, got] of [
        ['v1', await listV1(base, '/', maxKeys)],
        ['v2', await listV2(base, '/', maxKeys)],
      ] as const) {
        expect([version, maxKeys, got.keys, got.prefixes]).toEqual([
          version,
          maxKeys,
          want.keys,
          want.prefixes,
        ]);
        expect(got.pages).toBe(Math.max(1, Math.ceil(want.all.length / maxKeys)));
      }
    }
  });

  it('never leaks a made-up name into NextMarker or the continuation token', async () => {
    const first = await client.send(
      new ListObjectsCommand({ Bucket: sts.bucket, Prefix: base, Delimiter: '/', MaxKeys: 1 }),
    );
    expect(first.CommonPrefixes?.map((p) => p.Prefix)).toEqual([`${base}DCIM/`]);
    // The marker is the last entry shown, not 'DCIM0' (which would skip the key DCIM0).
    expect(first.NextMarker).toBe(`${base}DCIM/`);
    const second = await client.send(
      new ListObjectsCommand({
        Bucket: sts.bucket,
        Prefix: base,
        Delimiter: '/',
        MaxKeys: 1,
        Marker: first.NextMarker,
      }),
    );
    expect(second.Contents?.map((o) => o.Key)).toEqual([`${base}DCIM0`]);
    const v2 = await client.send(
      new ListObjectsV2Command({ Bucket: sts.bucket, Prefix: base, Delimiter: '/', MaxKeys: 1 }),
    );
    expect(Buffer.from(v2.NextContinuationToken!, 'base64url').toString()).toBe(`${base}DCIM/`);
  });

  it('treats a marker inside a common prefix as that prefix shown already', async () => {
    const v2 = await listV2(base, '/', 1000, `${base}DCIM/100`);
    expect(v2.prefixes[0]).toBe(`${base}a/`);
    expect(v2.keys[0]).toBe(`${base}DCIM0`);
    const v1 = await client.send(
      new ListObjectsCommand({ Bucket: sts.bucket, Prefix: base, Delimiter: '/', Marker: `${base}a/b` }),
    );
    expect(v1.Contents?.[0]?.Key).toBe(`${base}a0`);
    expect(v1.CommonPrefixes?.[0]?.Prefix).toBe(`${base}z a/`);
  });
});

describe('other delimiters, prefixes and no delimiter', () => {
  it('match the plain listing for every page size', async () => {
    const cases: [string, string][] = [
      [base, ''],
      [base, 'a'],
      [base, '.'],
      [base, ' '],
      [base, 'é'],
      [base, '0'],
      [base, '/1'],
      [`${base}a`, '/'],
      [`${base}a/`, '/'],
      [`${base}DCIM`, '/'],
      [`${base}é`, '/'],
      [`${base}nothing`, '/'],
    ];
    for (const [prefix, delimiter] of cases) {
      const want = expected(prefix, delimiter);
      for (const maxKeys of [1, 3, 1000]) {
        const v1 = await listV1(prefix, delimiter, maxKeys);
        const v2 = await listV2(prefix, delimiter, maxKeys);
        const tag = `${prefix.slice(base.length)}|${delimiter}|${maxKeys}`;
        expect([tag, v1.keys, v1.prefixes]).toEqual([tag, want.keys, want.prefixes]);
        expect([tag, v2.keys, v2.prefixes]).toEqual([tag, want.keys, want.prefixes]);
      }
    }
  });
});

describe('listing details checked by ceph/s3-tests', () => {
  it('max-keys=0 answers an empty page that is not truncated (v1 and v2)', async () => {
    const v1 = await client.send(new ListObjectsCommand({ Bucket: sts.bucket, Prefix: base, MaxKeys: 0 }));
    expect([v1.IsTruncated, v1.Contents ?? []]).toEqual([false, []]);
    const v2 = await client.send(new ListObjectsV2Command({ Bucket: sts.bucket, Prefix: base, MaxKeys: 0 }));
    expect([v2.IsTruncated, v2.KeyCount, v2.Contents ?? []]).toEqual([false, 0, []]);
  });

  it('fetch-owner=true gives each object its Owner; v2 without it gives none; v1 always does', async () => {
    const owned = await client.send(
      new ListObjectsV2Command({ Bucket: sts.bucket, Prefix: base, FetchOwner: true, MaxKeys: 2 }),
    );
    expect(owned.Contents?.map((o) => o.Owner?.ID)).toEqual([s.workspaceId, s.workspaceId]);
    const plain = await client.send(
      new ListObjectsV2Command({ Bucket: sts.bucket, Prefix: base, MaxKeys: 2 }),
    );
    expect(plain.Contents?.map((o) => o.Owner)).toEqual([undefined, undefined]);
    const v1 = await client.send(new ListObjectsCommand({ Bucket: sts.bucket, Prefix: base, MaxKeys: 1 }));
    expect(v1.Contents?.[0]?.Owner?.ID).toBe(s.workspaceId);
  });

  it('encodes keys, prefixes, markers and the delimiter with encoding-type=url', async () => {
    const r = await rawS3(sts, {
      method: 'GET',
      path: '/media',
      query: {
        prefix: `${base}é`,
        delimiter: '/',
        'encoding-type': 'url',
        'max-keys': '1',
        marker: `${base}é.`,
      },
    });
    expect(r.status).toBe(200);
    const enc = (k: string): string => encodeURIComponent(k).replace(/%2F/g, '/');
    expect(r.body).toContain(`<CommonPrefixes><Prefix>${enc(`${base}é/`)}</Prefix></CommonPrefixes>`);
    expect(r.body).toContain(`<NextMarker>${enc(`${base}é/`)}</NextMarker>`);
    expect(r.body).toContain(`<Marker>${enc(`${base}é.`)}</Marker>`);
    expect(r.body).toContain('<IsTruncated>true</IsTruncated>');
  });

  it('refuses a continuation token it did not make', async () => {
    const r = await rawS3(sts, {
      method: 'GET',
      path: '/media',
      query: { 'list-type': '2', prefix: base, 'continuation-token': 'not*a*token' },
    });
    expect([r.status, r.code]).toEqual([400, 'InvalidArgument']);
  });
});
