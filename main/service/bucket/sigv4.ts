/**
 * AWS Signature Version 4 as S3 checks it, for the embedded bucket: the
 * Authorization header form and the presigned query form. The canonical
 * request is rebuilt from what arrived (method, path, query, the headers the
 * client says it signed, the payload hash it declared) and the signature is
 * recomputed with the secret of that access key; nothing of the request is
 * trusted before that. The payload itself is checked while it streams in
 * (see s3-server.ts): a hex SHA-256 must match the body; UNSIGNED-PAYLOAD is
 * allowed (what the agent sends, with Content-MD5); aws-chunked bodies are
 * refused, none of the clients this bucket serves needs them (README).
 */
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { getCanonicalQuery } from '@smithy/signature-v4';
import { encodeKey } from '../../core/storage/s3-put.js';
import { accessDenied, invalidArgument, invalidRequest, notImplemented, S3Error } from './s3-protocol.js';

export const SIGNING_REGION = 'us-east-1';
/** How far a request's x-amz-date may be from our clock, as S3 allows. */
export const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;
/** Longest lifetime of a presigned URL, as S3 allows (7 days). */
const MAX_PRESIGN_SECONDS = 604_800;
const ALGORITHM = 'AWS4-HMAC-SHA256';
export const UNSIGNED = 'UNSIGNED-PAYLOAD';

export type Query = Record<string, string>;

/** What a signed request claims, before it is verified. */
export interface Claim {
  accessKeyId: string;
  sessionToken: string | undefined;
  /** `YYYYMMDDTHHMMSSZ` */
  amzDate: string;
  scope: string;
  signedHeaders: string[];
  signature: string;
  /** A lowercase hex SHA-256 the body must have, or UNSIGNED. */
  payloadHash: string;
  /** Presigned: seconds of validity after amzDate. */
  expiresSeconds?: number;
}

const sigMalformed = (why: string): S3Error =>
  new S3Error(400, 'AuthorizationHeaderMalformed', `The authorization header is malformed: ${why}.`);
const queryMalformed = (why: string): S3Error =>
  new S3Error(400, 'AuthorizationQueryParametersError', `The presigned URL is not valid: ${why}.`);

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
};

/** Reads the claim of a request; throws S3's error when it carries none or a malformed one. */
export function readClaim(req: IncomingMessage, query: Query): Claim {
  const auth = header(req, 'authorization');
  const presigned = query['X-Amz-Algorithm'] !== undefined || query['X-Amz-Signature'] !== undefined;
  if (auth !== undefined && presigned) {
    throw invalidArgument('Only one auth mechanism allowed: the Authorization header or a presigned URL.');
  }
  if (auth === undefined && !presigned) {
    throw accessDenied(
      "Anonymous access is not allowed: sign requests with the credentials from the service's sts endpoint.",
    );
  }
  return auth !== undefined ? fromHeader(req, auth) : fromQuery(req, query);
}

function parseScope(credential: string, fail: (why: string) => S3Error): { id: string; scope: string } {
  const [id, date, region, service, terminator, ...rest] = credential.split('/');
  if (!id || !date || rest.length > 0 || terminator !== 'aws4_request' || service !== 's3') {
    throw fail('the Credential must be <access key id>/<date>/<region>/s3/aws4_request');
  }
  if (!/^\d{8}$/.test(date)) throw fail('the Credential date must be YYYYMMDD');
  if (region !== SIGNING_REGION) {
    throw fail(`the region '${region ?? ''}' is wrong; expecting '${SIGNING_REGION}'`);
  }
  return { id, scope: `${date}/${region}/s3/aws4_request` };
}

function payloadHashOf(value: string | undefined, fallback: string | undefined): string {
  const v = value ?? fallback;
  if (v === undefined) {
    throw invalidRequest('Missing required header for this request: x-amz-content-sha256.');
  }
  if (v === UNSIGNED) return UNSIGNED;
  if (/^[0-9a-fA-F]{64}$/.test(v)) return v.toLowerCase();
  if (v.startsWith('STREAMING-')) {
    throw notImplemented(`An aws-chunked body (${v.slice(0, 64)})`);
  }
  throw new S3Error(
    400,
    'InvalidArgument',
    'x-amz-content-sha256 must be a hex SHA-256 of the body or UNSIGNED-PAYLOAD.',
  );
}

function fromHeader(req: IncomingMessage, auth: string): Claim {
  if (auth.startsWith('AWS ')) {
    throw invalidRequest('Signature Version 2 is not supported: use AWS Signature Version 4.');
  }
  const m =
    /^AWS4-HMAC-SHA256 +Credential=([^,\s]+), *SignedHeaders=([a-z0-9;-]+), *Signature=([0-9a-f]{64})$/.exec(
      auth.trim(),
    );
  if (!m) {
    throw sigMalformed(`use ${ALGORITHM} Credential=..., SignedHeaders=..., Signature=<64 hex digits>`);
  }
  const { id, scope } = parseScope(m[1] ?? '', sigMalformed);
  const signedHeaders = (m[2] ?? '').split(';');
  // SigV4 takes the request's time from x-amz-date, else from the Date header (then signed).
  const dated = header(req, 'x-amz-date') === undefined ? header(req, 'date') : undefined;
  const amzDate = header(req, 'x-amz-date') ?? (dated !== undefined ? basicIsoDate(dated) : undefined);
  if (amzDate === undefined) {
    throw accessDenied('AWS authentication requires a valid x-amz-date or Date header.');
  }
  const mustSign = [
    'host',
    'x-amz-date',
    'x-amz-content-sha256',
    'x-amz-security-token',
    ...(dated ? ['date'] : []),
  ];
  for (const required of mustSign) {
    if (req.headers[required] !== undefined && !signedHeaders.includes(required)) {
      throw accessDenied(`The header ${required} must be signed (listed in SignedHeaders).`);
    }
  }
  return {
    accessKeyId: id,
    sessionToken: header(req, 'x-amz-security-token'),
    amzDate,
    scope,
    signedHeaders,
    signature: m[3] ?? '',
    payloadHash: payloadHashOf(header(req, 'x-amz-content-sha256'), undefined),
  };
}

function fromQuery(req: IncomingMessage, q: Query): Claim {
  if (q['X-Amz-Algorithm'] !== ALGORITHM) throw queryMalformed(`X-Amz-Algorithm must be ${ALGORITHM}`);
  const signature = q['X-Amz-Signature'] ?? '';
  if (!/^[0-9a-f]{64}$/.test(signature)) throw queryMalformed('X-Amz-Signature must be 64 hex digits');
  const expires = q['X-Amz-Expires'] ?? '';
  if (!/^\d{1,6}$/.test(expires) || +expires < 1 || +expires > MAX_PRESIGN_SECONDS) {
    throw queryMalformed(`X-Amz-Expires must be a number of seconds from 1 to ${MAX_PRESIGN_SECONDS}`);
  }
  const signedHeaders = (q['X-Amz-SignedHeaders'] ?? '').split(';');
  if (!signedHeaders.includes('host')) throw queryMalformed('X-Amz-SignedHeaders must include host');
  const { id, scope } = parseScope(q['X-Amz-Credential'] ?? '', queryMalformed);
  // A presigned URL signs no payload, unless the client signed this header or put it in the query.
  const declared = signedHeaders.includes('x-amz-content-sha256')
    ? header(req, 'x-amz-content-sha256')
    : (q['X-Amz-Content-Sha256'] ?? q['x-amz-content-sha256']);
  return {
    accessKeyId: id,
    sessionToken: q['X-Amz-Security-Token'],
    amzDate: q['X-Amz-Date'] ?? '',
    scope,
    signedHeaders,
    signature,
    payloadHash: payloadHashOf(declared, UNSIGNED),
    expiresSeconds: +expires,
  };
}

/** An HTTP date as SigV4 writes times (YYYYMMDDTHHMMSSZ); '' when it is not a date. */
function basicIsoDate(httpDate: string): string {
  const at = Date.parse(httpDate);
  return Number.isNaN(at)
    ? ''
    : new Date(at)
        .toISOString()
        .replace(/[-:]/g, '')
        .replace(/\.\d{3}/, '');
}

function parseAmzDate(s: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return NaN;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

/** Checks the request's time: within the skew window, or within a presigned URL's validity. */
export function checkTime(claim: Claim, now: number): void {
  const at = parseAmzDate(claim.amzDate);
  if (Number.isNaN(at) || !claim.scope.startsWith(claim.amzDate.slice(0, 8))) {
    throw accessDenied('x-amz-date must be YYYYMMDDTHHMMSSZ and fall on the date of the Credential scope.');
  }
  if (at - now > MAX_CLOCK_SKEW_MS || (claim.expiresSeconds === undefined && now - at > MAX_CLOCK_SKEW_MS)) {
    throw new S3Error(
      403,
      'RequestTimeTooSkewed',
      "The difference between the request time and the server's time is too large (over 15 minutes): check this computer's clock.",
    );
  }
  if (claim.expiresSeconds !== undefined && now > at + claim.expiresSeconds * 1000) {
    throw new S3Error(403, 'AccessDenied', 'Request has expired: make a new presigned URL.');
  }
}

/**
 * S3's canonical URI: the decoded path encoded again the one way SigV4 allows,
 * so a client's choice of escapes does not matter.
 */
function canonicalUri(decodedPath: string): string {
  return encodeKey(decodedPath);
}

function canonicalHeaders(req: IncomingMessage, names: string[]): string {
  return names
    .map((name) => {
      const values = req.headersDistinct[name] ?? [];
      return `${name}:${values.map((v) => v.trim().replace(/\s+/g, ' ')).join(',')}\n`;
    })
    .join('');
}

const hmac = (key: KeyObject | Buffer | string, data: string): Buffer =>
  createHmac('sha256', key).update(data).digest();

/** Signing keys by secret and scope (date/region/service): a credential signs many requests a day. */
const signingKeys = new Map<string, KeyObject>();
const MAX_SIGNING_KEYS = 1024;

/**
 * The SigV4 signing key of `secret` for `scope` (date/region/s3/aws4_request):
 * four HMACs, computed once per credential and day, as the AWS SDKs cache it.
 * Kept as a KeyObject: given a Buffer, every createHmac() makes one of its own
 * (about 20 µs of CPU against 4 µs for the HMAC of a request with a KeyObject).
 */
export function signingKey(secret: string, scope: string): KeyObject {
  const id = `${scope}\n${secret}`;
  let key = signingKeys.get(id);
  if (!key) {
    const [date = '', region = ''] = scope.split('/');
    key = createSecretKey(hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), 's3'), 'aws4_request'));
    if (signingKeys.size >= MAX_SIGNING_KEYS) signingKeys.clear();
    signingKeys.set(id, key);
  }
  return key;
}

/** Throws SignatureDoesNotMatch unless the claim's signature is the one `secret` gives. */
export function verifySignature(
  claim: Claim,
  req: IncomingMessage,
  decodedPath: string,
  query: Query,
  secret: string,
): void {
  const canonical = [
    req.method ?? 'GET',
    canonicalUri(decodedPath),
    getCanonicalQuery({ query } as Parameters<typeof getCanonicalQuery>[0]),
    canonicalHeaders(req, claim.signedHeaders),
    claim.signedHeaders.join(';'),
    claim.payloadHash,
  ].join('\n');
  const stringToSign = [
    ALGORITHM,
    claim.amzDate,
    claim.scope,
    // Header values arrive as latin1 (one char per byte): hashed as those bytes, so a
    // client that signed UTF-8 metadata values is verified against what it signed.
    createHash('sha256').update(canonical, 'latin1').digest('hex'),
  ].join('\n');
  const expected = hmac(signingKey(secret, claim.scope), stringToSign);
  if (!timingSafeEqual(expected, Buffer.from(claim.signature, 'hex'))) {
    throw new S3Error(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  }
}
