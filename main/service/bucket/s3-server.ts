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
  isoDate,
  quoted,
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
} from './s3-protocol.js';
import { checkTime, readClaim, verifySignature, UNSIGNED, type Claim, type Query } from './sigv4.js';
import { listObjects } from './s3-list.js';
import {
  ALWAYS_ALLOWED,
  allowOnly,
  boundedInt,
  checkKey,
  hostName,
  parseTarget,
  partNumber,
  type Target,
} from './s3-request.js';
import type { BucketStore, ObjectRow, Received } from './store.js';

const MAX_COMPLETE_BODY = 1024 * 1024;

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

function bucketRequest(
  req: IncomingMessage,
  res: ServerResponse,
  opts: S3ServerOptions,
  cred: Credential,
  query: Query,
): void {
  const method = req.method ?? 'GET';
  if (method === 'HEAD' && Object.keys(query).every(ALWAYS_ALLOWED)) return void sendXml(res, 200, '', true);
  if (method !== 'GET') throw accessDenied('These credentials cannot change the bucket itself.');
  if (query.location !== undefined) {
    allowOnly(query, ['location'], 'GetBucketLocation');
    // us-east-1 is the empty LocationConstraint.
    return void sendXml(res, 200, xmlDocument('LocationConstraint', {}));
  }
  sendXml(res, 200, listObjects(opts.store, opts.bucket, cred.prefix, query));
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
      // A client that went away (timeout, hang-up) is no fault of ours.
      if (!(err instanceof S3Error) && !req.destroyed && !res.destroyed) opts.onInternalError(err);
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
