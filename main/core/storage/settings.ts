/**
 * The server's storage settings (bucket, endpoint, region, object key prefix
 * of an STS answer) are checked before the first byte goes anywhere: a
 * bucket named `../evil` would otherwise send a card to `PUT /..%2Fevil/...`
 * on the endpoint, and a prefix of `../../etc` put our files outside the
 * workspace's folder.
 *
 * Checked twice, with the same rules: when the STS answer is read
 * (api/schemas.ts), and when an uploader builds a client for a target
 * (session.ts), whoever supplied it. A wrong setting is the server's answer
 * being wrong, not the network: the error is a `malformed-response` that is
 * not retried by itself, names the field, and tells who can fix it.
 */
import type { StorageProvider } from '../api/types.js';
import { DmsError } from '../errors.js';

export interface StorageSettings {
  provider: StorageProvider;
  bucket: string;
  endpoint: string;
  region: string;
  /** `object_key_prefix`: may be empty, may end with `/`. */
  objectKeyPrefix: string;
}

/** The STS answer's field names: what the server's administrator sees in their settings. */
export type SettingsField = 'bucket' | 'endpoint' | 'region' | 'object_key_prefix';

/** Where the settings came from, for the technical message. */
export interface SettingsSource {
  method?: string;
  path?: string;
}

// Controls, bidi overrides and isolates are shown escaped: a hostile value must not act on a terminal or a UI.
// eslint-disable-next-line no-control-regex
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/** A value from the server as it can be shown: quoted, escaped, at most 80 characters. */
export function shown(value: string): string {
  const cut = value.length > 80 ? `${value.slice(0, 80)}...` : value;
  return `"${cut.replace(/\\/g, '\\\\').replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

export function storageSettingsError(
  field: SettingsField,
  problem: string,
  source: SettingsSource = {},
): DmsError {
  const from = source.method !== undefined ? ` (the answer to ${source.method} ${source.path ?? ''})` : '';
  return new DmsError(
    'malformed-response',
    `The server's storage settings are wrong${from}: ${field} ${problem}. Nothing was sent to the bucket.`,
    {
      ...(source.method !== undefined ? { method: source.method } : {}),
      ...(source.path !== undefined ? { path: source.path } : {}),
      status: 200,
      retryable: false,
      plain:
        `The server's storage settings are wrong (${field} ${problem}), so nothing was sent. ` +
        "Ask the server's administrator to correct them, then choose Retry.",
    },
  );
}

// S3 (AWS, MinIO, Ceph RGW) general purpose bucket names:
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const S3_RESERVED_START = /^(xn--|sthree-|amzn-s3-demo-)/;
const S3_RESERVED_END = /(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/;
// Alibaba OSS: https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions
const OSS_BUCKET = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** Why `bucket` is not a bucket name of `provider`, or undefined when it is one. */
export function bucketProblem(provider: StorageProvider, bucket: string): string | undefined {
  if (provider === 'ali') {
    return OSS_BUCKET.test(bucket)
      ? undefined
      : `${shown(bucket)} is not an Alibaba OSS bucket name (3-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit)`;
  }
  if (
    !S3_BUCKET.test(bucket) ||
    bucket.includes('..') ||
    /^\d+\.\d+\.\d+\.\d+$/.test(bucket) ||
    S3_RESERVED_START.test(bucket) ||
    S3_RESERVED_END.test(bucket)
  ) {
    return `${shown(bucket)} is not an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit, not an IP address)`;
  }
  return undefined;
}

/** A path segment of an endpoint (a gateway mounted under a path): no escapes, no dot segments. */
const ENDPOINT_SEGMENT = /^[A-Za-z0-9_~-][A-Za-z0-9._~-]*$/;

/**
 * Why `endpoint` is not a bucket endpoint, or undefined. Checked on the text
 * as sent, before URL parsing: the WHATWG parser silently drops tabs and
 * newlines, turns `\` into `/` and resolves `..`, which would hide a trick.
 */
export function endpointProblem(endpoint: string): string | undefined {
  // Empty: the provider's own default endpoint (the STS answer itself always names one).
  if (endpoint === '') return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f-\u009f\\]/.test(endpoint)) {
    return 'contains spaces, control characters or backslashes';
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(.*)$/.exec(endpoint);
  if (m === null) return `${shown(endpoint)} is not an address of the form http(s)://host[:port]`;
  const [, scheme = '', authority = '', path = '', rest = ''] = m;
  if (!/^https?$/i.test(scheme)) return `${shown(`${scheme}:`)} is not allowed (only http:// and https://)`;
  // Not quoted: a user name or password in the address may be a secret.
  if (authority.includes('@')) return 'contains a user name or password (user@host)';
  // (URL parsing would take the path of `http:///x` for a host, and decode %-escapes in one.)
  if (authority === '' || authority.includes('%')) return `${shown(endpoint)} names no plain host`;
  if (rest !== '') return 'has a query or fragment (? or #)';
  const segments = path.split('/').slice(1);
  if (
    path !== '' &&
    path !== '/' &&
    !segments.every((s, i) => ENDPOINT_SEGMENT.test(s) || (s === '' && i === segments.length - 1))
  ) {
    return `path ${shown(path)} is not a plain path (no %-escapes, no . or .. segments, no empty segments)`;
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return `${shown(endpoint)} is not a valid address`;
  }
  if (url.hostname === '') return `${shown(endpoint)} names no host`;
  return undefined;
}

/** Region names of S3, MinIO, Ceph (zonegroups) and OSS: letters, digits, `-` and `_`; empty = default. */
const REGION = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function regionProblem(region: string): string | undefined {
  if (region === '' || REGION.test(region)) return undefined;
  return `${shown(region)} is not a region name (letters, digits, - and _, at most 64)`;
}

// What a prefix segment must never hold: controls (they would reach logs and
// consoles) and backslashes (a path separator to some tools).
// eslint-disable-next-line no-control-regex
const DANGEROUS_IN_PREFIX = /[\u0000-\u001f\u007f-\u009f\\]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why the server's object key prefix is not usable, or undefined. It is kept
 * as the server gave it (keys must start with it), so one that is unsafe is
 * refused rather than rewritten. Empty segments (`ws//media`, a leading or
 * trailing `/`) are only joined, as before.
 */
export function prefixProblem(prefix: string): string | undefined {
  for (const seg of prefix.split('/')) {
    if (seg === '.' || seg === '..')
      return `${shown(prefix)} climbs out of the workspace's folder (a . or .. segment)`;
    if (DANGEROUS_IN_PREFIX.test(seg) || LONE_SURROGATE.test(seg))
      return `${shown(prefix)} contains control characters or backslashes`;
  }
  return undefined;
}

/** Throws the storage settings error of the first wrong field. */
export function checkStorageSettings(s: StorageSettings, source: SettingsSource = {}): void {
  const problems: Array<[SettingsField, string | undefined]> = [
    ['bucket', bucketProblem(s.provider, s.bucket)],
    ['endpoint', endpointProblem(s.endpoint)],
    ['region', regionProblem(s.region)],
    ['object_key_prefix', prefixProblem(s.objectKeyPrefix)],
  ];
  for (const [field, problem] of problems) {
    if (problem !== undefined) throw storageSettingsError(field, problem, source);
  }
}
