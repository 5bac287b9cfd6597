/**
 * The S3 wire format the embedded bucket speaks: its XML error answers with
 * S3's own codes and statuses, the few XML documents it returns, and the one
 * it reads (CompleteMultipartUpload, parsed with fast-xml-parser: clients
 * escape the quotes of ETags as entities, e.g. Go's &#34;).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { XMLParser } from 'fast-xml-parser';

/** A refusal in S3's terms; the message says what to do in plain words. */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'S3Error';
  }
}

export const accessDenied = (message: string): S3Error => new S3Error(403, 'AccessDenied', message);
export const invalidArgument = (message: string): S3Error => new S3Error(400, 'InvalidArgument', message);
export const invalidRequest = (message: string): S3Error => new S3Error(400, 'InvalidRequest', message);
/** `why` replaces the general reason when there is a more useful one. */
export const notImplemented = (what: string, why?: string): S3Error =>
  new S3Error(
    501,
    'NotImplemented',
    `${what} is not implemented by this bucket: ` +
      (why ??
        'it serves only what Drone Media Sync uses (objects, multipart uploads, listing under your own prefix).'),
  );
export const noSuchUpload = (): S3Error =>
  new S3Error(
    404,
    'NoSuchUpload',
    'The specified multipart upload does not exist (aborted, completed, or never created for this key).',
  );
export const noSuchKey = (): S3Error => new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');

/** S3 answers 400 RequestTimeout to a connection on which the request stopped arriving. */
export const requestTimeout = (): S3Error =>
  new S3Error(400, 'RequestTimeout', 'The request did not arrive completely in time. Send it again.');

/**
 * Requests Node's HTTP parser refused before they existed, as S3 answers
 * them: URL and headers over the limit (S3's own limit is 8 KiB), a header
 * with a line break or a control character, a request line that is not HTTP.
 */
export function refusedBeforeRequest(
  kind: 'too-large' | 'timeout' | 'malformed',
  opts: { maxHeaderBytes: number },
): S3Error {
  switch (kind) {
    case 'too-large':
      return new S3Error(
        400,
        'RequestHeaderSectionTooLarge',
        `The request's URL and headers are larger than ${opts.maxHeaderBytes} bytes. Check the object key and the headers (a session token is far shorter).`,
      );
    case 'timeout':
      return requestTimeout();
    case 'malformed':
      return new S3Error(
        400,
        'BadRequest',
        'The request is not valid HTTP: a header holds a line break or a control character, or the request line is malformed.',
      );
  }
}

const escape = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export type XmlValue = string | number | boolean | XmlTree | XmlTree[] | undefined;
export interface XmlTree {
  [element: string]: XmlValue;
}

/** `{A: 1, B: [{C: 'x'}, {C: 'y'}]}` -> `<A>1</A><B><C>x</C></B><B><C>y</C></B>`; undefined is left out. */
function render(tree: XmlTree): string {
  let out = '';
  for (const [name, value] of Object.entries(tree)) {
    if (value === undefined) continue;
    const items = Array.isArray(value) ? value : [value];
    for (const item of items) {
      const inner = typeof item === 'object' ? render(item) : escape(String(item));
      out += `<${name}>${inner}</${name}>`;
    }
  }
  return out;
}

/** S3 quotes ETags in headers and XML alike. */
export const quoted = (etag: string): string => `"${etag}"`;
export const isoDate = (ms: number): string => new Date(ms).toISOString();

export const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

export function xmlElement(root: string, tree: XmlTree): string {
  return `<${root} xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${render(tree)}</${root}>`;
}

export function xmlDocument(root: string, tree: XmlTree): string {
  return XML_DECLARATION + xmlElement(root, tree);
}

/** Random bytes are drawn from this pool, refilled POOL_BYTES at a time (see randomHex). */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let taken = 0;

/**
 * `bytes` random bytes in hex, from the operating system's generator as
 * randomBytes() gives them, drawn from a pool: one randomBytes() call per
 * 4 KiB instead of one per request id and file name (each call is a few
 * microseconds of system calls and locking, three of them per PUT).
 */
export function randomHex(bytes: number): string {
  if (taken + bytes > pool.length) {
    pool = randomBytes(Math.max(POOL_BYTES, bytes));
    taken = 0;
  }
  const hex = pool.toString('hex', taken, taken + bytes); // each byte is handed out once
  taken += bytes;
  return hex;
}

/** S3's request ids: 16 hex digits, in the x-amz-request-id header and in error bodies alike. */
export const newRequestId = (): string => randomHex(8).toUpperCase();

/** `<Error>` with S3's fields, without the XML declaration. */
export function errorElement(err: S3Error, requestId: string, resource?: string): string {
  return `<Error>${render({ Code: err.code, Message: err.message, Resource: resource, RequestId: requestId })}</Error>`;
}

/** A whole error answer's body: the declaration and `<Error>`. */
export function errorDocument(err: S3Error, requestId = newRequestId(), resource?: string): string {
  return XML_DECLARATION + errorElement(err, requestId, resource);
}

export function sendXml(res: ServerResponse, status: number, body: string, head = false): void {
  res.writeHead(status, {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body),
  });
  res.end(head ? undefined : body);
}

/**
 * The error answer. `close`: the request body was not read, so the
 * connection cannot carry another request.
 */
export function sendError(
  res: ServerResponse,
  err: S3Error,
  opts: { head: boolean; close: boolean; requestId: string; resource?: string },
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorDocument(err, opts.requestId, opts.resource);
  if (opts.close) res.setHeader('connection', 'close');
  // HEAD answers carry no body: the code goes in a header so clients can still tell.
  res.setHeader('x-amz-error-code', err.code);
  sendXml(res, err.status, body, opts.head);
}

export interface CompletedPart {
  partNumber: number;
  etag: string;
  /** Flexible checksums the list names for the part: algorithm (crc32, sha256...) -> base64. */
  checksums: Record<string, string>;
}

const CHECKSUM_ELEMENT = /^Checksum(CRC32|CRC32C|CRC64NVME|SHA1|SHA256)$/;

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  processEntities: true,
  // Numeric character references (Go's encoder writes &#34; for the quotes of ETags).
  htmlEntities: true,
  isArray: (name) => name === 'Part',
});

/** The part list of a CompleteMultipartUpload body, validated: numbers 1-10000 ascending, ETags present. */
export function parseCompleteBody(text: string): CompletedPart[] {
  const malformed = new S3Error(
    400,
    'MalformedXML',
    'The XML you provided was not well-formed or did not validate against our published schema.',
  );
  let doc: unknown;
  try {
    doc = parser.parse(text, true);
  } catch {
    throw malformed;
  }
  const root = (doc as { CompleteMultipartUpload?: { Part?: unknown } } | null)?.CompleteMultipartUpload;
  const list = root?.Part;
  if (!Array.isArray(list) || list.length === 0) throw malformed;
  const parts: CompletedPart[] = [];
  for (const item of list as Record<string, unknown>[]) {
    const n = typeof item.PartNumber === 'string' ? item.PartNumber.trim() : '';
    const etag = typeof item.ETag === 'string' ? item.ETag.trim().replace(/^"|"$/g, '') : '';
    if (!/^\d{1,5}$/.test(n) || +n < 1 || +n > 10_000) {
      throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive.');
    }
    if (!/^[0-9a-f]{32}$/i.test(etag)) throw malformed;
    const previous = parts.at(-1);
    if (previous && previous.partNumber >= +n) {
      throw new S3Error(
        400,
        'InvalidPartOrder',
        'The list of parts was not in ascending order. Parts must be ordered by part number.',
      );
    }
    const checksums: Record<string, string> = {};
    for (const [name, value] of Object.entries(item)) {
      const m = CHECKSUM_ELEMENT.exec(name);
      if (m && typeof value === 'string') checksums[m[1]!.toLowerCase()] = value.trim();
    }
    parts.push({ partNumber: +n, etag: etag.toLowerCase(), checksums });
  }
  return parts;
}
