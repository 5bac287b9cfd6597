/**
 * The embedded bucket's HTTP side: a strict subset of S3, exactly what
 * Drone Media Sync's agent and ordinary S3 clients (AWS SDK, rclone) need to
 * upload: PutObject, the multipart calls (create, upload part, list parts,
 * complete, abort), HEAD/GET of objects, listing under one's own prefix,
 * HEAD bucket and its location. Path-style only. Everything else gets S3's
 * own error. Order for every request: parse, verify the signature and the
 * credential, check the key is under the credential's prefix, and only then
 * read the body (and say 100 Continue to clients that wait for it).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { encodeKey } from '../../core/storage/s3-put.js';
import {
  accessDenied,
  invalidArgument,
  invalidRequest,
  noSuchKey,
  notImplemented,
  parseCompleteBody,
  S3Error,
  sendError,
  sendXml,
  xmlDocument,
  errorElement,
  xmlElement,
  XML_DECLARATION,
  type XmlTree,
} from './s3-protocol.js';
import { checkTime, readClaim, verifySignature, UNSIGNED, type Claim, type Query } from './sigv4.js';
import type { BucketStore, ObjectRow, Received } from './store.js';

export interface Credential {
  workspaceId: string;
  /** The workspace's key prefix, without the trailing '/'. */
  prefix: string;
  secret: string;
  sessionTokenHash: string;
  expiresAt: number;
  /** The host name the client was given with these credentials ('' = the bucket's own). */
  endpointHost: string;
}

export interface S3ServerOptions {
  bucket: string;
  store: BucketStore;
  /** The credential of an access key id, or undefined when unknown. */
  credential(accessKeyId: string): Credential | undefined;
  hashSessionToken(token: string): string;
  /** Host name of the bucket's endpoint when credentials name none. */
  defaultHost: string;
  maxObjectBytes: number;
  maxPartBytes: number;
  /** How often a long Complete sends a space; below the idle timeouts on both sides. */
  completeKeepAliveMs: number;
  /** Told of every failure that is not an S3 refusal (the client gets InternalError). */
  onInternalError(err: unknown): void;
}

/** What a request is, once parsed. */
interface Target {
  /** The object key, decoded; '' for the bucket itself. */
  key: string;
  decodedPath: string;
  query: Query;
}

const MAX_COMPLETE_BODY = 1024 * 1024;
const MAX_KEY_BYTES = 1024;
/** Query parameters allowed on every request: the SDK's operation marker and presigned-URL fields. */
const ALWAYS_ALLOWED = (name: string): boolean => name === 'x-id' || name.toLowerCase().startsWith('x-amz-');

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

function parseTarget(req: IncomingMessage, bucket: string): Target {
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

function hostName(hostHeader: string | undefined): string | undefined {
  if (hostHeader === undefined) return undefined;
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return undefined;
  }
}

/** The signature, the credential behind it, its lifetime and its host. */
function authenticate(
  req: IncomingMessage,
  target: Target,
  opts: S3ServerOptions,
): { claim: Claim; cred: Credential } {
  const claim = readClaim(req, target.query);
  const cred = opts.credential(claim.accessKeyId);
  if (!cred) {
    throw new S3Error(
      403,
      'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.',
    );
  }
  const now = Date.now();
  checkTime(claim, now);
  verifySignature(claim, req, target.decodedPath, target.query, cred.secret);
  const token = claim.sessionToken === undefined ? '' : opts.hashSessionToken(claim.sessionToken);
  if (
    token.length !== cred.sessionTokenHash.length ||
    !timingSafeEqual(Buffer.from(token), Buffer.from(cred.sessionTokenHash))
  ) {
    throw new S3Error(400, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
  }
  if (cred.expiresAt <= now) throw new S3Error(400, 'ExpiredToken', 'The provided token has expired.');
  const wantedHost = cred.endpointHost || opts.defaultHost;
  if (
    hostName(req.headers.host) !==
    hostName(wantedHost.includes(':') && !wantedHost.startsWith('[') ? `[${wantedHost}]` : wantedHost)
  ) {
    throw accessDenied(
      `Requests must be sent to the endpoint these credentials came with (host ${wantedHost}).`,
    );
  }
  return { claim, cred };
}

function checkKey(key: string, prefix: string): void {
  if (!key.startsWith(`${prefix}/`) || key.length === prefix.length + 1) {
    throw accessDenied(`These credentials only give access to keys under ${prefix}/.`);
  }
  if (key.split('/').some((s) => s === '.' || s === '..')) {
    throw accessDenied('Object keys with . or .. segments are not allowed.');
  }
  if (Buffer.byteLength(key) > MAX_KEY_BYTES)
    throw new S3Error(400, 'KeyTooLongError', 'Your key is too long (over 1024 bytes).');
}

function allowOnly(query: Query, allowed: string[], what: string): void {
  for (const name of Object.keys(query)) {
    if (!allowed.includes(name) && !ALWAYS_ALLOWED(name))
      throw notImplemented(`${what} with the parameter "${name}"`);
  }
}

function contentLength(req: IncomingMessage, max: number): number {
  const raw = req.headers['content-length'];
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) {
    throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
  }
  if (+raw > max) {
    throw new S3Error(
      400,
      'EntityTooLarge',
      `Your proposed upload exceeds the maximum allowed size (${max} bytes).`,
    );
  }
  return +raw;
}

function contentMd5(req: IncomingMessage): Buffer | undefined {
  const given = req.headers['content-md5'];
  if (given === undefined) return undefined;
  const raw = Array.isArray(given) ? given.join(',') : given;
  const digest = Buffer.from(raw, 'base64');
  if (digest.length !== 16 || digest.toString('base64') !== raw.trim()) {
    throw new S3Error(400, 'InvalidDigest', 'The Content-MD5 you specified is not valid.');
  }
  return digest;
}

const contentType = (req: IncomingMessage): string | null => {
  const v = req.headers['content-type'];
  return v !== undefined && v.length <= 256 ? v : null;
};

const quoted = (etag: string): string => `"${etag}"`;
const isoDate = (ms: number): string => new Date(ms).toISOString();

/** Reads the body into tmp/, checking its length, Content-MD5 and declared SHA-256. */
async function receiveBody(
  req: IncomingMessage,
  res: ServerResponse,
  opts: S3ServerOptions,
  claim: Claim,
  max: number,
): Promise<Received> {
  const length = contentLength(req, max);
  const md5 = contentMd5(req);
  if (req.headers['x-amz-copy-source'] !== undefined)
    throw notImplemented('Copying objects (x-amz-copy-source)');
  if (req.headers['content-encoding']?.includes('aws-chunked')) throw notImplemented('An aws-chunked body');
  sayContinue(req, res);
  const sha = claim.payloadHash === UNSIGNED ? undefined : createHash('sha256');
  const got = await opts.store.receive(req, sha ? (chunk) => sha.update(chunk) : undefined);
  const fail = async (err: S3Error): Promise<never> => {
    await opts.store.discard(got.tmp);
    throw err;
  };
  if (got.size !== length)
    await fail(
      new S3Error(
        400,
        'IncompleteBody',
        'You did not provide the number of bytes specified by the Content-Length HTTP header.',
      ),
    );
  if (md5 && !md5.equals(got.md5))
    await fail(
      new S3Error(400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.'),
    );
  if (sha && sha.digest('hex') !== claim.payloadHash) {
    await fail(
      new S3Error(
        400,
        'XAmzContentSHA256Mismatch',
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
      ),
    );
  }
  return got;
}

/** Clients that wait for "100 Continue" get it only once the request has passed every check. */
function sayContinue(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
}

async function readSmallBody(req: IncomingMessage, res: ServerResponse, max: number): Promise<string> {
  sayContinue(req, res);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw new S3Error(400, 'MaxMessageLengthExceeded', 'Your request was too big.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function partNumber(query: Query): number {
  const raw = query.partNumber ?? '';
  if (!/^\d{1,5}$/.test(raw) || +raw < 1 || +raw > 10_000) {
    throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive.');
  }
  return +raw;
}

function boundedInt(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d{1,6}$/.test(raw)) throw invalidArgument(`${name} must be a non-negative integer.`);
  return Math.min(+raw, max);
}

function sendObjectHead(
  res: ServerResponse,
  obj: ObjectRow,
  status: number,
  length: number,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...extra,
    'content-length': length,
    'content-type': obj.content_type ?? 'application/octet-stream',
    etag: quoted(obj.etag),
    'last-modified': new Date(obj.last_modified).toUTCString(),
    'accept-ranges': 'bytes',
  });
}

/** A single `bytes=a-b`, `a-` or `-n` range; undefined when none was asked. */
function range(header: string | undefined, size: number): { start: number; end: number } | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  const invalid = new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable.');
  if (!m || (m[1] === '' && m[2] === '')) throw invalid;
  let start: number;
  let end: number;
  if (m[1] === '') {
    start = Math.max(0, size - +m[2]!);
    end = size - 1;
  } else {
    start = +m[1]!;
    end = m[2] === '' ? size - 1 : Math.min(+m[2]!, size - 1);
  }
  if (start > end || start >= size) throw invalid;
  return { start, end };
}

async function getObject(
  req: IncomingMessage,
  res: ServerResponse,
  opts: S3ServerOptions,
  key: string,
): Promise<void> {
  const obj = opts.store.object(key);
  if (!obj) throw noSuchKey();
  const head = req.method === 'HEAD';
  const r = head ? undefined : range(req.headers.range, obj.size);
  if (!r) {
    sendObjectHead(res, obj, 200, obj.size);
    if (head) return void res.end();
  } else {
    sendObjectHead(res, obj, 206, r.end - r.start + 1, {
      'content-range': `bytes ${r.start}-${r.end}/${obj.size}`,
    });
  }
  await pipeline(createReadStream(obj.path, r ?? {}), res);
}

function listObjects(res: ServerResponse, opts: S3ServerOptions, cred: Credential, query: Query): void {
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
  if (!prefix.startsWith(`${cred.prefix}/`)) {
    throw accessDenied(`These credentials can only list keys under ${cred.prefix}/: set prefix to it.`);
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
  // Keys with the prefix sort in [prefix, prefix + U+FFFF).
  const end = `${prefix}\uffff`;
  const contents: ObjectRow[] = [];
  const common: string[] = [];
  let truncated = false;
  let last = after;
  while (contents.length + common.length < maxKeys) {
    const rows = opts.store.list(prefix, last, end, maxKeys + 1);
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
    truncated = opts.store.list(prefix, last, end, 1).length > 0;
  const tree: XmlTree = {
    Name: opts.bucket,
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
  sendXml(res, 200, xmlDocument('ListBucketResult', tree));
}

async function bucketRequest(
  req: IncomingMessage,
  res: ServerResponse,
  opts: S3ServerOptions,
  cred: Credential,
  query: Query,
): Promise<void> {
  const method = req.method ?? 'GET';
  if (method === 'HEAD' && Object.keys(query).every(ALWAYS_ALLOWED)) return void sendXml(res, 200, '', true);
  if (method !== 'GET') throw accessDenied('These credentials cannot change the bucket itself.');
  if (query.location !== undefined) {
    allowOnly(query, ['location'], 'GetBucketLocation');
    // us-east-1 is the empty LocationConstraint.
    return void sendXml(res, 200, xmlDocument('LocationConstraint', {}));
  }
  listObjects(res, opts, cred, query);
  return Promise.resolve();
}

async function objectRequest(
  req: IncomingMessage,
  res: ServerResponse,
  opts: S3ServerOptions,
  claim: Claim,
  cred: Credential,
  target: Target,
): Promise<void> {
  const { key, query } = target;
  checkKey(key, cred.prefix);
  const method = req.method ?? 'GET';
  const uploadId = query.uploadId;
  if (method === 'PUT' && uploadId === undefined) {
    allowOnly(query, [], 'PutObject');
    const got = await receiveBody(req, res, opts, claim, opts.maxObjectBytes);
    const md5 = got.md5.toString('hex');
    await opts.store.commitObject(cred.workspaceId, key, got.tmp, {
      size: got.size,
      md5,
      etag: md5,
      contentType: contentType(req),
    });
    res.writeHead(200, { etag: quoted(md5), 'content-length': 0 });
    return void res.end();
  }
  if (method === 'PUT') {
    allowOnly(query, ['partNumber', 'uploadId'], 'UploadPart');
    const n = partNumber(query);
    const upload = opts.store.upload(uploadId!, cred.workspaceId, key);
    const got = await receiveBody(req, res, opts, claim, opts.maxPartBytes);
    await opts.store.commitPart(upload, n, got);
    res.writeHead(200, { etag: quoted(got.md5.toString('hex')), 'content-length': 0 });
    return void res.end();
  }
  if (method === 'POST' && query.uploads !== undefined) {
    allowOnly(query, ['uploads'], 'CreateMultipartUpload');
    const id = opts.store.createUpload(cred.workspaceId, key, contentType(req));
    return void sendXml(
      res,
      200,
      xmlDocument('InitiateMultipartUploadResult', { Bucket: opts.bucket, Key: key, UploadId: id }),
    );
  }
  if (method === 'POST' && uploadId !== undefined) {
    allowOnly(query, ['uploadId'], 'CompleteMultipartUpload');
    const upload = opts.store.upload(uploadId, cred.workspaceId, key);
    const parts = opts.store.checkParts(
      upload,
      parseCompleteBody(await readSmallBody(req, res, MAX_COMPLETE_BODY)),
    );
    return answerWhileWorking(res, opts, key, opts.store.complete(upload, parts), (etag) =>
      xmlElement('CompleteMultipartUploadResult', {
        Location: `/${opts.bucket}/${encodeKey(key)}`,
        Bucket: opts.bucket,
        Key: key,
        ETag: quoted(etag),
      }),
    );
  }
  if (method === 'GET' && uploadId !== undefined) {
    allowOnly(query, ['uploadId', 'part-number-marker', 'max-parts'], 'ListParts');
    const upload = opts.store.upload(uploadId, cred.workspaceId, key);
    const marker = boundedInt(query['part-number-marker'], 'part-number-marker', 0, 10_000);
    const max = boundedInt(query['max-parts'], 'max-parts', 1000, 1000);
    const rows = opts.store.parts(upload.upload_id, marker, max + 1);
    const truncated = rows.length > max;
    const shown = rows.slice(0, max);
    return void sendXml(
      res,
      200,
      xmlDocument('ListPartsResult', {
        Bucket: opts.bucket,
        Key: key,
        UploadId: uploadId,
        PartNumberMarker: marker,
        NextPartNumberMarker: shown.at(-1)?.part_number ?? marker,
        MaxParts: max,
        IsTruncated: truncated,
        StorageClass: 'STANDARD',
        Part: shown.map((p) => ({
          PartNumber: p.part_number,
          LastModified: isoDate(p.last_modified),
          ETag: quoted(p.md5),
          Size: p.size,
        })),
      }),
    );
  }
  if (method === 'DELETE' && uploadId !== undefined) {
    allowOnly(query, ['uploadId'], 'AbortMultipartUpload');
    await opts.store.abort(opts.store.upload(uploadId, cred.workspaceId, key));
    res.writeHead(204);
    return void res.end();
  }
  if (method === 'GET' || method === 'HEAD') {
    allowOnly(query, [], method === 'GET' ? 'GetObject' : 'HeadObject');
    return getObject(req, res, opts, key);
  }
  if (method === 'DELETE') throw notImplemented('DeleteObject');
  throw new S3Error(405, 'MethodNotAllowed', `The method ${method} is not allowed against this resource.`);
}

/**
 * Like S3 for a long CompleteMultipartUpload: answers 200 at once and sends
 * a space every few seconds until the work is done, then the result, or an
 * <Error> inside the 200 (which the SDKs read as an error). Neither the
 * client's read timeout nor our own idle timeout can cut a big assembly.
 */
async function answerWhileWorking<T>(
  res: ServerResponse,
  opts: S3ServerOptions,
  resource: string,
  work: Promise<T>,
  result: (value: T) => string,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/xml' });
  res.write(XML_DECLARATION);
  const timer = setInterval(() => res.write(' '), opts.completeKeepAliveMs);
  try {
    res.end(result(await work));
  } catch (err) {
    if (!(err instanceof S3Error)) opts.onInternalError(err);
    const s3 = err instanceof S3Error ? err : internalError();
    res.end(errorElement(s3, resource));
  } finally {
    clearInterval(timer);
  }
}

const internalError = (): S3Error =>
  new S3Error(500, 'InternalError', 'We encountered an internal error. Please try again.');

/** The request handler of the bucket's HTTP server. */
export function s3Handler(opts: S3ServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const run = async (): Promise<void> => {
      const target = parseTarget(req, opts.bucket);
      const { claim, cred } = authenticate(req, target, opts);
      if (target.key === '') return bucketRequest(req, res, opts, cred, target.query);
      return objectRequest(req, res, opts, claim, cred, target);
    };
    run().catch((err: unknown) => {
      if (!(err instanceof S3Error) && !req.destroyed) opts.onInternalError(err);
      const s3 = err instanceof S3Error ? err : internalError();
      // A body that was not (fully) read cannot be followed by another request on this connection.
      sendError(res, s3, {
        head: req.method === 'HEAD',
        close: !req.complete,
        resource: req.url?.split('?')[0],
      });
    });
  };
}
