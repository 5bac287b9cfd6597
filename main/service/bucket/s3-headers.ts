/**
 * Which request headers the embedded bucket honours, operation by operation,
 * and how it refuses the others: the one table behind the claimed surface in
 * docs/embedded-bucket.md. Nothing is accepted and ignored: an x-amz-* field
 * (a header, or for a presigned URL an x-amz-* query parameter, which S3
 * reads as a header) that no rule honours for the operation is refused with
 * S3's own error, as are the standard headers whose meaning S3 gives them
 * (conditions, Range) on an operation that does not honour them.
 *
 * Also here: what of a PUT or CreateMultipartUpload is kept with the object
 * (Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
 * Expires, x-amz-meta-*) and given back on GET and HEAD.
 */
import type { IncomingMessage } from 'node:http';
import { invalidRequest, notImplemented, S3Error } from './s3-protocol.js';
import type { Query } from './sigv4.js';

export type Operation =
  | 'PutObject'
  | 'UploadPart'
  | 'CreateMultipartUpload'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListParts'
  | 'GetObject'
  | 'HeadObject'
  | 'ListObjects'
  | 'HeadBucket'
  | 'GetBucketLocation';

const OBJECT_READS: Operation[] = ['GetObject', 'HeadObject'];
const BODY_WRITES: Operation[] = ['PutObject', 'UploadPart'];
const OBJECT_CREATES: Operation[] = ['PutObject', 'CreateMultipartUpload'];

/** Parts of the signature, and what SDKs add to every request: read by sigv4.ts, meaningless otherwise. */
const SIGNING = new Set([
  'x-amz-date',
  'x-amz-content-sha256',
  'x-amz-security-token',
  'x-amz-user-agent',
  'x-amz-algorithm',
  'x-amz-credential',
  'x-amz-expires',
  'x-amz-signedheaders',
  'x-amz-signature',
]);

/** Canned ACLs that say what this bucket does anyway: only the owner (the workspace's credentials) reads. */
const OWNER_ONLY_ACLS = new Set(['private', 'bucket-owner-full-control']);

/** Checksums verified on PUT and UploadPart (node:crypto and zlib compute them). */
export const CHECKSUM_ALGORITHMS = ['crc32', 'sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

interface Rule {
  /** The field names this rule is about. */
  matches(name: string): boolean;
  /** Operations that honour the field (the value may still be refused by `check`). */
  honoured: Operation[];
  /** Refuses a value that is not honoured; when the field is not honoured at all, `refusal` says why. */
  check?(value: string, name: string): void;
  refusal?(name: string): S3Error;
}

const is =
  (...names: string[]) =>
  (name: string): boolean =>
    names.includes(name);
const startsWith =
  (prefix: string) =>
  (name: string): boolean =>
    name.startsWith(prefix);

const notHere = (name: string, what: string, why?: string): S3Error =>
  notImplemented(`${what} (${name})`, why);

/**
 * The table: the first rule that matches a name decides.
 * docs/embedded-bucket.md describes each row.
 */
export const HEADER_RULES: Rule[] = [
  {
    matches: is('if-match', 'if-none-match'),
    honoured: [...OBJECT_READS, 'PutObject', 'CompleteMultipartUpload'],
  },
  { matches: is('if-modified-since', 'if-unmodified-since'), honoured: OBJECT_READS },
  { matches: is('range', 'if-range'), honoured: OBJECT_READS },
  {
    matches: is('x-amz-checksum-mode'),
    honoured: OBJECT_READS,
    check: (v) => mustBe(v, ['ENABLED'], 'x-amz-checksum-mode'),
  },
  { matches: startsWith('x-amz-meta-'), honoured: OBJECT_CREATES },
  {
    matches: is('x-amz-acl'),
    honoured: OBJECT_CREATES,
    check(value) {
      if (!OWNER_ONLY_ACLS.has(value)) throw aclsNotSupported();
    },
  },
  { matches: startsWith('x-amz-grant-'), honoured: [], refusal: () => aclsNotSupported() },
  {
    matches: is('x-amz-storage-class'),
    honoured: OBJECT_CREATES,
    check(value) {
      if (value !== 'STANDARD')
        throw new S3Error(400, 'InvalidStorageClass', 'This bucket has one storage class: STANDARD.');
    },
  },
  {
    matches: is('x-amz-checksum-algorithm'),
    honoured: ['CreateMultipartUpload'],
    check(value, name) {
      if (!(CHECKSUM_ALGORITHMS as readonly string[]).includes(value.toLowerCase()))
        throw unsupportedChecksum(`${name}: ${value}`);
    },
    refusal: (name) => onCreateOnly(name),
  },
  {
    matches: is('x-amz-checksum-type'),
    honoured: ['CreateMultipartUpload'],
    refusal: (n) => onCreateOnly(n),
  },
  {
    // On Complete: the checksum the client expects of the object (s3-server.ts).
    matches: (n) => n.startsWith('x-amz-checksum-') && n !== 'x-amz-checksum-mode',
    honoured: [...BODY_WRITES, 'CompleteMultipartUpload'],
    check(_value, name) {
      if (!(CHECKSUM_ALGORITHMS as readonly string[]).includes(name.slice('x-amz-checksum-'.length)))
        throw unsupportedChecksum(name);
    },
    refusal: (name) => wholeObjectChecksums(name),
  },
  {
    matches: is('x-amz-sdk-checksum-algorithm'),
    honoured: BODY_WRITES,
    check(value, name) {
      if (!(CHECKSUM_ALGORITHMS as readonly string[]).includes(value.toLowerCase()))
        throw unsupportedChecksum(`${name}: ${value}`);
    },
  },
  {
    matches: startsWith('x-amz-server-side-encryption'),
    honoured: [],
    refusal: (name) =>
      notHere(
        name,
        'Server-side encryption',
        "objects are stored as sent, on the service's own disk; send the request without this header.",
      ),
  },
  {
    matches: startsWith('x-amz-object-lock-'),
    honoured: [],
    refusal: () =>
      invalidRequest('Bucket is missing Object Lock Configuration: this bucket has no object lock.'),
  },
  {
    matches: is('x-amz-tagging', 'x-amz-tagging-directive'),
    honoured: [],
    refusal: (n) => notHere(n, 'Object tags'),
  },
  {
    matches: is('x-amz-website-redirect-location'),
    honoured: [],
    refusal: (n) => notHere(n, 'Website redirects'),
  },
  { matches: startsWith('x-amz-copy-source'), honoured: [], refusal: (n) => notHere(n, 'Copying objects') },
  {
    matches: is('x-amz-expected-bucket-owner'),
    honoured: [],
    refusal: (n) => notHere(n, 'Checking the bucket owner', 'this bucket has no account ids to check.'),
  },
  { matches: is('x-amz-request-payer'), honoured: [], refusal: (n) => notHere(n, 'Requester pays') },
  {
    matches: is('x-amz-trailer', 'x-amz-decoded-content-length'),
    honoured: [],
    refusal: (n) => notHere(n, 'An aws-chunked body'),
  },
];

function mustBe(value: string, allowed: string[], name: string): void {
  if (!allowed.includes(value)) {
    throw new S3Error(400, 'InvalidArgument', `${name} must be ${allowed.join(' or ')}.`);
  }
}

const aclsNotSupported = (): S3Error =>
  new S3Error(
    400,
    'AccessControlListNotSupported',
    "The bucket does not allow ACLs: objects are readable only with the workspace's own credentials.",
  );
const unsupportedChecksum = (what: string): S3Error =>
  notImplemented(`The checksum ${what}`, 'it verifies CRC32, SHA1 and SHA256 checksums, and Content-MD5.');
const onCreateOnly = (name: string): S3Error =>
  notImplemented(`The header ${name} here`, 'it is read on CreateMultipartUpload only.');
const wholeObjectChecksums = (what: string): S3Error =>
  notImplemented(
    `A whole-object checksum of a multipart upload (${what})`,
    'send a CRC32, SHA1 or SHA256 checksum with each part instead.',
  );

/** The header, or x-amz-* query parameter, fields of a request that the rules judge; lowercase names. */
export function requestFields(req: IncomingMessage, query: Query): Map<string, string> {
  const fields = new Map<string, string>();
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    if (values !== undefined) fields.set(name, values.join(','));
  }
  for (const [name, value] of Object.entries(query)) {
    const lower = name.toLowerCase();
    if (lower.startsWith('x-amz-') && !SIGNING.has(lower) && !fields.has(lower)) fields.set(lower, value);
  }
  return fields;
}

/** Names a rule is about even when they are not x-amz-*: the standard headers S3 gives a meaning. */
const judged = (name: string): boolean =>
  name.startsWith('x-amz-') || HEADER_RULES.some((r) => r.matches(name));

/** Refuses the request unless every field it carries is honoured by `op`. */
export function checkFields(op: Operation, fields: Map<string, string>): void {
  for (const [name, value] of fields) {
    if (SIGNING.has(name) || !judged(name)) continue;
    const rule = HEADER_RULES.find((r) => r.matches(name));
    if (rule && rule.honoured.includes(op)) {
      rule.check?.(value, name);
      continue;
    }
    throw rule?.refusal?.(name) ?? notImplemented(`The header ${name} on ${op}`);
  }
}

/** Standard headers kept with an object and given back on GET and HEAD. */
const STORED_STANDARD = [
  'cache-control',
  'content-disposition',
  'content-encoding',
  'content-language',
  'expires',
] as const;

/** S3's limit of user metadata: names (without x-amz-meta-) and values, in bytes. */
export const MAX_USER_METADATA_BYTES = 2048;

/**
 * What of a PUT or CreateMultipartUpload is kept with the object, as
 * received (a value is given back byte for byte: Node reads header bytes
 * as latin1 and writes them the same way).
 */
export function storedHeaders(fields: Map<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  let userBytes = 0;
  for (const [name, value] of fields) {
    if (name.startsWith('x-amz-meta-')) {
      userBytes +=
        Buffer.byteLength(name.slice('x-amz-meta-'.length), 'latin1') + Buffer.byteLength(value, 'latin1');
      kept[name] = value;
    } else if (name === 'content-encoding') {
      // "aws-chunked" names the framing of the request body, not the object's encoding:
      // S3 drops it. (A framed body itself is refused: see sigv4.ts and x-amz-decoded-content-length.)
      const codings = value
        .split(',')
        .map((c) => c.trim())
        .filter((c) => c !== '' && c.toLowerCase() !== 'aws-chunked');
      if (codings.length > 0) kept[name] = codings.join(', ');
    } else if ((STORED_STANDARD as readonly string[]).includes(name)) {
      kept[name] = value;
    }
  }
  if (userBytes > MAX_USER_METADATA_BYTES) {
    throw new S3Error(
      400,
      'MetadataTooLarge',
      `Your metadata headers exceed the maximum allowed metadata size (${userBytes} of ${MAX_USER_METADATA_BYTES} bytes).`,
    );
  }
  return kept;
}

/** GetObject's response-* parameters: the header each one sets in the answer. */
export const RESPONSE_OVERRIDES: Record<string, string> = {
  'response-content-type': 'content-type',
  'response-content-language': 'content-language',
  'response-expires': 'expires',
  'response-cache-control': 'cache-control',
  'response-content-disposition': 'content-disposition',
  'response-content-encoding': 'content-encoding',
};

/** The answer's headers as the query's response-* parameters set them. */
export function responseOverrides(query: Query): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [param, header] of Object.entries(RESPONSE_OVERRIDES)) {
    const value = query[param];
    if (value === undefined) continue;
    // Node refuses to write characters a header cannot carry; say so in S3's terms.
    if (/[^\t\x20-\x7e\x80-\xff]/.test(value))
      throw invalidRequest(`${param} has characters a header cannot carry.`);
    out[header] = value;
  }
  return out;
}
