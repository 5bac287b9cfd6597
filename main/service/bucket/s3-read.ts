/**
 * GetObject and HeadObject: conditions (s3-conditions.ts), one byte range
 * (HEAD included: 206 with the range's length, as S3 answers), the headers
 * kept with the object, and GetObject's response-* overrides.
 */
import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { checkRead, readConditions } from './s3-conditions.js';
import { responseOverrides } from './s3-headers.js';
import { noSuchKey, quoted, S3Error } from './s3-protocol.js';
import type { Query } from './sigv4.js';
import type { BucketStore, ObjectRow } from './store.js';

/** A single `bytes=a-b`, `a-` or `-n` range; undefined when none was asked. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) {
    throw new S3Error(
      416,
      'InvalidRange',
      'The requested range is not one this bucket serves: one range, bytes=first-last, first- or -suffix.',
    );
  }
  let start: number;
  let end: number;
  if (m[1] === '') {
    start = Math.max(0, size - +m[2]!);
    end = size - 1;
  } else {
    start = +m[1]!;
    end = m[2] === '' ? size - 1 : Math.min(+m[2]!, size - 1);
  }
  if (start > end || start >= size)
    throw new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable.');
  return { start, end };
}

/**
 * If-Range: the range is served only if the object is still the one the
 * client saw (its ETag, or its Last-Modified date); otherwise the whole
 * object, so that a client never splices bytes of two versions.
 */
function rangeStillValid(ifRange: string | undefined, obj: ObjectRow): boolean {
  if (ifRange === undefined) return true;
  const v = ifRange.trim();
  if (v.startsWith('"') || v.startsWith('W/'))
    return v.replace(/^W\//, '').replace(/^"|"$/g, '') === obj.etag;
  const at = Date.parse(v);
  return !Number.isNaN(at) && Math.floor(at / 1000) === Math.floor(obj.last_modified / 1000);
}

/** The headers of an object as GET and HEAD give them. */
function objectHeaders(obj: ObjectRow, withChecksum: boolean): Record<string, string> {
  const out: Record<string, string> = {
    'content-type': obj.content_type ?? 'application/octet-stream',
    etag: quoted(obj.etag),
    'last-modified': new Date(obj.last_modified).toUTCString(),
    'accept-ranges': 'bytes',
  };
  for (const [name, value] of Object.entries(JSON.parse(obj.headers) as Record<string, string>)) {
    if (!name.startsWith('x-amz-checksum-')) out[name] = value;
    else if (withChecksum) {
      out[name] = value;
      // A single PUT's checksum is of the whole object; a multipart one says its type.
      out['x-amz-checksum-type'] ??= 'FULL_OBJECT';
    }
  }
  return out;
}

export async function getObject(
  req: IncomingMessage,
  res: ServerResponse,
  store: BucketStore,
  key: string,
  query: Query,
): Promise<void> {
  const obj = store.object(key);
  if (!obj) throw noSuchKey();
  const head = req.method === 'HEAD';
  if (
    checkRead(readConditions(req.headers), { etag: obj.etag, lastModified: obj.last_modified }) ===
    'not-modified'
  ) {
    res.writeHead(304, {
      etag: quoted(obj.etag),
      'last-modified': new Date(obj.last_modified).toUTCString(),
    });
    return void res.end();
  }
  const ifRange = req.headersDistinct['if-range']?.join(',');
  const r = rangeStillValid(ifRange, obj) ? parseRange(req.headers.range, obj.size) : undefined;
  const headers = {
    ...objectHeaders(obj, req.headers['x-amz-checksum-mode'] === 'ENABLED' && !r),
    ...responseOverrides(query),
  };
  if (!r) res.writeHead(200, { ...headers, 'content-length': obj.size });
  else {
    res.writeHead(206, {
      ...headers,
      'content-length': r.end - r.start + 1,
      'content-range': `bytes ${r.start}-${r.end}/${obj.size}`,
    });
  }
  if (head) return void res.end();
  await pipeline(createReadStream(obj.path, r ?? {}), res);
}
