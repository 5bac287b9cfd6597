/**
 * Reading an S3 request before anything is done for it: its bucket, key and
 * query (decoded once, strictly: a parameter given twice or bad
 * percent-encoding is refused), and the checks every operation shares.
 */
import type { IncomingMessage } from 'node:http';
import { accessDenied, invalidArgument, invalidRequest, notImplemented, S3Error } from './s3-protocol.js';
import type { Query } from './sigv4.js';

const MAX_KEY_BYTES = 1024;
/** Query parameters allowed on every request: the SDK's operation marker and presigned-URL fields. */
export const ALWAYS_ALLOWED = (name: string): boolean =>
  name === 'x-id' || name.toLowerCase().startsWith('x-amz-');

export /** What a request is, once parsed. */
interface Target {
  /** The object key, decoded; '' for the bucket itself. */
  key: string;
  decodedPath: string;
  query: Query;
}

function parseQuery(raw: string): Query {
  const query: Query = {};
  if (raw === '') return query;
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1));
    if (Object.hasOwn(query, name)) throw invalidArgument(`The query parameter ${name} is given twice.`);
    query[name] = value;
  }
  return query;
}

export function parseTarget(req: IncomingMessage, bucket: string): Target {
  const raw = req.url ?? '';
  if (!raw.startsWith('/')) throw invalidRequest('Only path-style requests to this endpoint are served.');
  const q = raw.indexOf('?');
  const rawPath = q < 0 ? raw : raw.slice(0, q);
  let decodedPath: string;
  let query: Query;
  try {
    decodedPath = rawPath
      .split('/')
      .map((s) => decodeURIComponent(s))
      .join('/');
    query = parseQuery(q < 0 ? '' : raw.slice(q + 1));
  } catch (err) {
    if (err instanceof S3Error) throw err;
    throw new S3Error(400, 'InvalidURI', 'Could not parse the specified URI (bad percent-encoding).');
  }
  const [, name = '', ...rest] = decodedPath.split('/');
  if (name !== bucket) throw accessDenied(`These credentials only give access to the bucket ${bucket}.`);
  return { key: rest.join('/'), decodedPath, query };
}

export function hostName(hostHeader: string | undefined): string | undefined {
  if (hostHeader === undefined) return undefined;
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return undefined;
  }
}

export function checkKey(key: string, prefix: string): void {
  if (!key.startsWith(`${prefix}/`) || key.length === prefix.length + 1) {
    throw accessDenied(`These credentials only give access to keys under ${prefix}/.`);
  }
  if (key.split('/').some((s) => s === '.' || s === '..')) {
    throw accessDenied('Object keys with . or .. segments are not allowed.');
  }
  if (Buffer.byteLength(key) > MAX_KEY_BYTES)
    throw new S3Error(400, 'KeyTooLongError', 'Your key is too long (over 1024 bytes).');
}

export function allowOnly(query: Query, allowed: string[], what: string): void {
  for (const name of Object.keys(query)) {
    if (!allowed.includes(name) && !ALWAYS_ALLOWED(name))
      throw notImplemented(`${what} with the parameter "${name}"`);
  }
}

export function partNumber(query: Query): number {
  const raw = query.partNumber ?? '';
  if (!/^\d{1,5}$/.test(raw) || +raw < 1 || +raw > 10_000) {
    throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive.');
  }
  return +raw;
}

export function boundedInt(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d{1,6}$/.test(raw)) throw invalidArgument(`${name} must be a non-negative integer.`);
  return Math.min(+raw, max);
}
