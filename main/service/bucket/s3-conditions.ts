/**
 * Conditional requests as S3 evaluates them (RFC 9110 §13.2.2 order).
 *
 * GET and HEAD: If-Match (412 unless the ETag is listed), else
 * If-Unmodified-Since (412 if modified after); then If-None-Match (304 if
 * the ETag is listed), else If-Modified-Since (304 unless modified after).
 * A date that does not parse is ignored, as the RFC says.
 *
 * PUT and CompleteMultipartUpload: If-None-Match: * (or a list of ETags)
 * refuses to replace an existing object (or one of those ETags) with 412;
 * If-Match requires the object to exist (404 NoSuchKey otherwise) with a
 * listed ETag (412 otherwise). Evaluated once before the body is read and
 * again at the moment the object is written, so two writers racing with
 * If-None-Match: * cannot both succeed.
 */
import { noSuchKey, S3Error } from './s3-protocol.js';

/** What the conditions look at. */
export interface Current {
  etag: string;
  lastModified: number;
}

export interface Conditions {
  ifMatch?: string;
  ifNoneMatch?: string;
  ifModifiedSince?: string;
  ifUnmodifiedSince?: string;
}

export const preconditionFailed = (): S3Error =>
  new S3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold.');

/** `*`, or a comma-separated list of ETags, quoted or not, weak or not. */
function listed(header: string, etag: string): boolean {
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
    .some((t) => t === '*' || t === etag);
}

/** Last-Modified as HTTP dates carry it: whole seconds. */
const seconds = (ms: number): number => Math.floor(ms / 1000);
const parseDate = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : seconds(at);
};

/** For GET and HEAD: 'send' the object, 'not-modified' (304), or throws 412. */
export function checkRead(c: Conditions, obj: Current): 'send' | 'not-modified' {
  const modified = seconds(obj.lastModified);
  if (c.ifMatch !== undefined) {
    if (!listed(c.ifMatch, obj.etag)) throw preconditionFailed();
  } else {
    const since = parseDate(c.ifUnmodifiedSince);
    if (since !== undefined && modified > since) throw preconditionFailed();
  }
  if (c.ifNoneMatch !== undefined) return listed(c.ifNoneMatch, obj.etag) ? 'not-modified' : 'send';
  const since = parseDate(c.ifModifiedSince);
  return since !== undefined && modified <= since ? 'not-modified' : 'send';
}

/** For writes: throws unless the object now at the key (if any) lets the write replace it. */
export function checkWrite(c: Conditions, current: Current | undefined): void {
  if (c.ifMatch !== undefined) {
    if (!current) throw noSuchKey();
    if (!listed(c.ifMatch, current.etag)) throw preconditionFailed();
  }
  if (c.ifNoneMatch !== undefined && current && listed(c.ifNoneMatch, current.etag)) {
    throw preconditionFailed();
  }
}

export function readConditions(headers: Record<string, string | string[] | undefined>): Conditions {
  const one = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v.join(',') : v;
  };
  const c: Conditions = {};
  const ifMatch = one('if-match');
  const ifNoneMatch = one('if-none-match');
  const ifModifiedSince = one('if-modified-since');
  const ifUnmodifiedSince = one('if-unmodified-since');
  if (ifMatch !== undefined) c.ifMatch = ifMatch;
  if (ifNoneMatch !== undefined) c.ifNoneMatch = ifNoneMatch;
  if (ifModifiedSince !== undefined) c.ifModifiedSince = ifModifiedSince;
  if (ifUnmodifiedSince !== undefined) c.ifUnmodifiedSince = ifUnmodifiedSince;
  return c;
}
