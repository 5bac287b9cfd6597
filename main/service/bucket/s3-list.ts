/**
 * ListObjects (v1) and ListObjectsV2 of the embedded bucket, only under the
 * caller's own prefix: keys in byte order, a delimiter folding keys into
 * common prefixes, pages of at most 1000, keys URL-encoded when asked
 * (rclone and boto3 do).
 *
 * The continuation rule, in one place: a listing is one ordered walk of
 * entries, each a key or a common prefix, and the marker (v1 marker or
 * NextMarker, v2 start-after or continuation token) is the last entry shown.
 * The walk goes on with keys after the marker, and with common prefixes
 * after it: a common prefix at or before the marker was shown already.
 */
import { encodeKey } from '../../core/storage/s3-put.js';
import { accessDenied, invalidArgument, isoDate, quoted, xmlDocument, type XmlTree } from './s3-protocol.js';
import { allowOnly, boundedInt } from './s3-request.js';
import type { Query } from './sigv4.js';
import type { BucketStore, ObjectRow } from './store.js';

/** The order of S3 listings: UTF-8 bytes (also SQLite's BINARY order of TEXT, and code point order). */
export const compareKeys = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The smallest string above every string that starts with `prefix`: its last
 * code point plus one (surrogates skipped, U+10FFFF carried into the one
 * before); undefined when nothing sorts above (only U+10FFFF left).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0) ?? 0);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last === 0x10ffff) continue;
    const next = last === 0xd7ff ? 0xe000 : last + 1;
    return String.fromCodePoint(...points, next);
  }
  return undefined;
}

/** A key, or a common prefix standing for every key that starts with it. */
export type Entry = { name: string; row: ObjectRow } | { name: string; row?: undefined };

const BATCH = 1000;

/**
 * Every entry under `prefix` after `marker`, in order. A key with the
 * delimiter after the prefix is folded into its common prefix (up to and
 * with the first delimiter), which comes once, at the place of its first
 * key; the walk then goes on past every key that starts with it.
 */
export function* walk(
  store: BucketStore,
  prefix: string,
  delimiter: string,
  marker: string,
): Generator<Entry> {
  const end = prefixEnd(prefix);
  let from = compareKeys(marker, prefix) >= 0 ? marker : prefix;
  let inclusive = from !== marker;
  for (;;) {
    const rows = store.list(from, inclusive, end, BATCH);
    if (rows.length === 0) return;
    let jumped = false;
    for (const row of rows) {
      const cut = delimiter === '' ? -1 : row.key.indexOf(delimiter, prefix.length);
      if (cut < 0) {
        yield { name: row.key, row };
        from = row.key;
        inclusive = false;
        continue;
      }
      const common = row.key.slice(0, cut + delimiter.length);
      if (compareKeys(common, marker) > 0) yield { name: common };
      const after = prefixEnd(common);
      if (after === undefined) return;
      from = after;
      inclusive = true;
      jumped = true;
      break;
    }
    if (!jumped && rows.length < BATCH) return;
  }
}

const V1_PARAMS = ['prefix', 'delimiter', 'max-keys', 'marker', 'encoding-type'];
const V2_PARAMS = [
  'list-type',
  'prefix',
  'delimiter',
  'max-keys',
  'continuation-token',
  'start-after',
  'encoding-type',
  'fetch-owner',
];

/** Our continuation tokens: the last entry shown, base64url. Anything else is refused. */
function readToken(token: string): string {
  const marker = Buffer.from(token, 'base64url').toString('utf8');
  if (Buffer.from(marker).toString('base64url') !== token) {
    throw invalidArgument('The continuation token provided is incorrect.');
  }
  return marker;
}

export function listObjects(
  store: BucketStore,
  bucket: string,
  owner: string,
  ownPrefix: string,
  query: Query,
): string {
  const v2 = query['list-type'] !== undefined;
  if (v2 && query['list-type'] !== '2')
    throw invalidArgument('list-type must be 2 (or absent for version 1).');
  allowOnly(query, v2 ? V2_PARAMS : V1_PARAMS, 'Listing');
  const prefix = query.prefix ?? '';
  if (!prefix.startsWith(`${ownPrefix}/`)) {
    throw accessDenied(`These credentials can only list keys under ${ownPrefix}/: set prefix to it.`);
  }
  const delimiter = query.delimiter ?? '';
  if (Buffer.byteLength(delimiter) > 1024) throw invalidArgument('The delimiter is longer than 1024 bytes.');
  const encodingType = query['encoding-type'];
  if (encodingType !== undefined && encodingType !== 'url')
    throw invalidArgument('Invalid Encoding Method specified in Request');
  const fetchOwner = query['fetch-owner'];
  if (fetchOwner !== undefined && fetchOwner !== 'true' && fetchOwner !== 'false')
    throw invalidArgument('fetch-owner must be true or false.');
  const enc = (s: string): string => (encodingType === 'url' ? encodeKey(s) : s);
  const maxKeys = boundedInt(query['max-keys'], 'max-keys', 1000, 1000);
  const token = v2 ? query['continuation-token'] : undefined;
  const marker =
    token !== undefined && token !== ''
      ? readToken(token)
      : ((v2 ? query['start-after'] : query.marker) ?? '');

  // One entry more than the page shows tells whether there is a next page.
  const entries: Entry[] = [];
  if (maxKeys > 0) {
    for (const entry of walk(store, prefix, delimiter, marker)) {
      entries.push(entry);
      if (entries.length > maxKeys) break;
    }
  }
  const truncated = entries.length > maxKeys;
  const shown = entries.slice(0, maxKeys);
  const last = shown.at(-1)?.name;
  // v1 always shows owners; v2 on fetch-owner=true. The owner of every object is the workspace.
  const withOwner = !v2 || fetchOwner === 'true';
  const tree: XmlTree = {
    Name: bucket,
    Prefix: enc(prefix),
    ...(v2
      ? {
          KeyCount: shown.length,
          ContinuationToken: token,
          NextContinuationToken:
            truncated && last !== undefined ? Buffer.from(last).toString('base64url') : undefined,
          StartAfter: query['start-after'] !== undefined ? enc(query['start-after']) : undefined,
        }
      : {
          Marker: enc(query.marker ?? ''),
          // S3 gives NextMarker only with a delimiter; without one, clients continue after the last key.
          NextMarker: truncated && delimiter !== '' && last !== undefined ? enc(last) : undefined,
        }),
    MaxKeys: maxKeys,
    Delimiter: delimiter === '' ? undefined : enc(delimiter),
    EncodingType: encodingType,
    IsTruncated: truncated,
    Contents: shown.flatMap(({ row }) =>
      row
        ? [
            {
              Key: enc(row.key),
              LastModified: isoDate(row.last_modified),
              ETag: quoted(row.etag),
              Size: row.size,
              StorageClass: 'STANDARD',
              Owner: withOwner ? { ID: owner, DisplayName: owner } : undefined,
            },
          ]
        : [],
    ),
    CommonPrefixes: shown.flatMap(({ name, row }) => (row ? [] : [{ Prefix: enc(name) }])),
  };
  return xmlDocument('ListBucketResult', tree);
}
