/**
 * ListObjects (v1) and ListObjectsV2 of the embedded bucket, only under the
 * caller's own prefix: keys in byte order, delimiter "/" folded into common
 * prefixes, pages of at most 1000, keys URL-encoded when asked (rclone does).
 */
import { encodeKey } from '../../core/storage/s3-put.js';
import {
  accessDenied,
  invalidArgument,
  isoDate,
  notImplemented,
  quoted,
  xmlDocument,
  type XmlTree,
} from './s3-protocol.js';
import { allowOnly, boundedInt } from './s3-request.js';
import type { Query } from './sigv4.js';
import type { BucketStore, ObjectRow } from './store.js';

/**
 * The smallest string above every key that starts with `prefix`: its last
 * code point plus one (SQLite compares UTF-8 bytes, which sort as code points).
 */
function prefixEnd(prefix: string): string {
  const points = Array.from(prefix);
  const last = points.pop()?.codePointAt(0) ?? 0;
  return points.join('') + String.fromCodePoint(last + 1);
}

export function listObjects(store: BucketStore, bucket: string, ownPrefix: string, query: Query): string {
  const v2 = query['list-type'] === '2';
  allowOnly(
    query,
    v2
      ? [
          'list-type',
          'prefix',
          'delimiter',
          'max-keys',
          'continuation-token',
          'start-after',
          'encoding-type',
          'fetch-owner',
        ]
      : ['prefix', 'delimiter', 'max-keys', 'marker', 'encoding-type'],
    'Listing',
  );
  const prefix = query.prefix ?? '';
  if (!prefix.startsWith(`${ownPrefix}/`)) {
    throw accessDenied(`These credentials can only list keys under ${ownPrefix}/: set prefix to it.`);
  }
  const delimiter = query.delimiter ?? '';
  if (delimiter !== '' && delimiter !== '/') throw notImplemented('Listing with a delimiter other than "/"');
  const encodingType = query['encoding-type'];
  if (encodingType !== undefined && encodingType !== 'url')
    throw invalidArgument('Invalid Encoding Method specified in Request');
  const enc = (s: string): string => (encodingType === 'url' ? encodeKey(s) : s);
  const maxKeys = boundedInt(query['max-keys'], 'max-keys', 1000, 1000);
  const after =
    v2 && query['continuation-token'] !== undefined
      ? Buffer.from(query['continuation-token'], 'base64url').toString('utf8')
      : ((v2 ? query['start-after'] : query.marker) ?? '');
  const end = prefixEnd(prefix);
  const contents: ObjectRow[] = [];
  const common: string[] = [];
  let truncated = false;
  let last = after;
  while (contents.length + common.length < maxKeys) {
    const rows = store.list(prefix, last, end, maxKeys + 1);
    if (rows.length === 0) break;
    for (const row of rows) {
      if (contents.length + common.length >= maxKeys) {
        truncated = true;
        break;
      }
      const cut = delimiter === '' ? -1 : row.key.indexOf(delimiter, prefix.length);
      if (cut >= 0) {
        const cp = row.key.slice(0, cut + 1);
        common.push(cp);
        // Skip every key under this common prefix: '/' + 1 is '0'.
        last = `${cp.slice(0, -1)}0`;
        break;
      }
      contents.push(row);
      last = row.key;
    }
    if (truncated) break;
  }
  if (!truncated && contents.length + common.length >= maxKeys)
    truncated = store.list(prefix, last, end, 1).length > 0;
  const tree: XmlTree = {
    Name: bucket,
    Prefix: enc(prefix),
    ...(v2
      ? {
          KeyCount: contents.length + common.length,
          ContinuationToken: query['continuation-token'],
          NextContinuationToken: truncated ? Buffer.from(last).toString('base64url') : undefined,
          StartAfter: query['start-after'] !== undefined ? enc(query['start-after']) : undefined,
        }
      : {
          Marker: enc(query.marker ?? ''),
          NextMarker: truncated && delimiter !== '' ? enc(last) : undefined,
        }),
    MaxKeys: maxKeys,
    Delimiter: delimiter === '' ? undefined : delimiter,
    EncodingType: encodingType,
    IsTruncated: truncated,
    Contents: contents.map((o) => ({
      Key: enc(o.key),
      LastModified: isoDate(o.last_modified),
      ETag: quoted(o.etag),
      Size: o.size,
      StorageClass: 'STANDARD',
    })),
    CommonPrefixes: common.map((p) => ({ Prefix: enc(p) })),
  };
  return xmlDocument('ListBucketResult', tree);
}
