/**
 * The embedded bucket's HTTP side: a strict subset of S3, exactly what
 * Drone Media Sync's agent and ordinary S3 clients (AWS SDK, rclone) need to
 * upload: PutObject, the multipart calls (create, upload part, list parts,
 * complete, abort), HEAD/GET of objects, listing under one's own prefix,
 * HEAD bucket and its location. Path-style only. Every header and parameter
 * is honoured as S3 honours it or refused with S3's own error, never ignored
 * (s3-headers.ts; docs/embedded-bucket.md). Order for every request: parse,
 * verify the signature and the credential, check the key is under the
 * credential's prefix, check the operation honours every header, and only
 * then read the body (and say 100 Continue to clients that wait for it).
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { encodeKey } from '../../core/storage/s3-put.js';
import { readSmallBody, receiveBody } from './s3-body.js';
import {
  checkChecksumValue,
  checksumElement,
  checksumHeader,
  checksumMismatch,
  checksummer,
  compositeChecksum,
  declaredChecksum,
  declaredMultipartChecksum,
  takeMultipartChecksum,
  withMultipartChecksum,
  type MultipartChecksum,
} from './s3-checksum.js';
import { checkWrite, readConditions, type Conditions } from './s3-conditions.js';
import {
  checkFields,
  RESPONSE_OVERRIDES,
  requestFields,
  storedHeaders,
  type ChecksumAlgorithm,
  type Operation,
} from './s3-headers.js';
import { listObjects } from './s3-list.js';
import {
  accessDenied,
  errorElement,
  invalidRequest,
  isoDate,
  newRequestId,
  noSuchUpload,
  notImplemented,
  parseCompleteBody,
  quoted,
  S3Error,
  sendError,
  sendXml,
  xmlDocument,
  xmlElement,
  XML_DECLARATION,
  type XmlTree,
} from './s3-protocol.js';
import { getObject } from './s3-read.js';
import { checkTime, readClaim, verifySignature, type Claim, type Query } from './sigv4.js';
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
import { multipartEtag, type BucketStore, type WriteCheck } from './store.js';

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

function bucketRequest(
  req: IncomingMessage,
  res: ServerResponse,
  opts: S3ServerOptions,
  cred: Credential,
  query: Query,
  fields: Map<string, string>,
): void {
  const method = req.method ?? 'GET';
  if (method === 'HEAD' && Object.keys(query).every(ALWAYS_ALLOWED)) {
    checkFields('HeadBucket', fields);
    return void sendXml(res, 200, '', true);
  }
  if (method !== 'GET') throw accessDenied('These credentials cannot change the bucket itself.');
  if (query.location !== undefined) {
    allowOnly(query, ['location'], 'GetBucketLocation');
    checkFields('GetBucketLocation', fields);
    // us-east-1 is the empty LocationConstraint.
    return void sendXml(res, 200, xmlDocument('LocationConstraint', {}));
  }
  checkFields('ListObjects', fields);
  sendXml(res, 200, listObjects(opts.store, opts.bucket, cred.workspaceId, cred.prefix, query));
}

type ObjectOperation = Exclude<Operation, 'ListObjects' | 'HeadBucket' | 'GetBucketLocation'>;

/** Which operation a request on an object is (its method and sub-resource). */
function objectOperation(method: string, query: Query): ObjectOperation {
  const upload = query.uploadId !== undefined;
  if (method === 'PUT') return upload ? 'UploadPart' : 'PutObject';
  if (method === 'POST' && query.uploads !== undefined) return 'CreateMultipartUpload';
  if (method === 'POST' && upload) return 'CompleteMultipartUpload';
  if (method === 'GET') return upload ? 'ListParts' : 'GetObject';
  if (method === 'HEAD' && !upload) return 'HeadObject';
  if (method === 'DELETE' && upload) return 'AbortMultipartUpload';
  if (method === 'DELETE') throw notImplemented('DeleteObject');
  throw new S3Error(405, 'MethodNotAllowed', `The method ${method} is not allowed against this resource.`);
}

const writeCheck =
  (conditions: Conditions): WriteCheck =>
  (current) =>
    checkWrite(conditions, current && { etag: current.etag, lastModified: current.last_modified });

async function putObject(r: ObjectCall): Promise<void> {
  const { req, res, opts, claim, cred, key, fields } = r;
  const check = writeCheck(readConditions(req.headers));
  check(opts.store.object(key)); // before the body is sent; again when it is written
  const headers = storedHeaders(fields);
  const checksum = declaredChecksum(fields);
  const got = await receiveBody(req, res, opts.store, claim, opts.maxObjectBytes, checksum);
  const md5 = got.md5.toString('hex');
  if (checksum) headers[checksumHeader(checksum.algorithm)] = checksum.value;
  await opts.store.commitObject(
    cred.workspaceId,
    key,
    got.tmp,
    { size: got.size, md5, etag: md5, contentType: contentType(req), headers },
    check,
  );
  res.writeHead(200, {
    etag: quoted(md5),
    'content-length': 0,
    ...(checksum ? { [checksumHeader(checksum.algorithm)]: checksum.value } : {}),
  });
  res.end();
}

async function uploadPart(r: ObjectCall): Promise<void> {
  const { req, res, opts, claim, cred, key, query, fields } = r;
  const n = partNumber(query);
  const upload = opts.store.upload(query.uploadId!, cred.workspaceId, key);
  const checksum = declaredChecksum(fields);
  const wanted = takeMultipartChecksum(JSON.parse(upload.headers) as Record<string, string>).checksum;
  if (wanted && checksum?.algorithm !== wanted.algorithm) throw partWithoutChecksum(wanted);
  const got = await receiveBody(req, res, opts.store, claim, opts.maxPartBytes, checksum);
  await opts.store.commitPart(upload, n, got, checksum ? { [checksum.algorithm]: checksum.value } : null);
  res.writeHead(200, {
    etag: quoted(got.md5.toString('hex')),
    'content-length': 0,
    ...(checksum ? { [checksumHeader(checksum.algorithm)]: checksum.value } : {}),
  });
  res.end();
}

const partWithoutChecksum = (c: MultipartChecksum): S3Error =>
  invalidRequest(
    `The upload was created using a ${c.algorithm.toUpperCase()} checksum: every part must carry its ` +
      `x-amz-checksum-${c.algorithm} (and the part list of Complete its ${checksumElement(c.algorithm)}).`,
  );

function createUpload(r: ObjectCall): void {
  const { req, res, opts, cred, key, fields } = r;
  const checksum = declaredMultipartChecksum(fields);
  const headers = withMultipartChecksum(storedHeaders(fields), checksum);
  const id = opts.store.createUpload(cred.workspaceId, key, contentType(req), headers);
  if (checksum) {
    res.setHeader('x-amz-checksum-algorithm', checksum.algorithm.toUpperCase());
    res.setHeader('x-amz-checksum-type', checksum.type);
  }
  sendXml(
    res,
    200,
    xmlDocument('InitiateMultipartUploadResult', { Bucket: opts.bucket, Key: key, UploadId: id }),
  );
}

/** The answer of Complete: where the object is, its ETag, and its checksum if it has one. */
function completeResult(
  opts: S3ServerOptions,
  key: string,
  etag: string,
  headers: Record<string, string>,
): XmlTree {
  const tree: XmlTree = {
    Location: `/${opts.bucket}/${encodeKey(key)}`,
    Bucket: opts.bucket,
    Key: key,
    ETag: quoted(etag),
  };
  for (const [name, value] of Object.entries(headers)) {
    const m = /^x-amz-checksum-(crc32|sha1|sha256)$/.exec(name);
    if (m) tree[checksumElement(m[1] as ChecksumAlgorithm)] = value;
  }
  if (headers['x-amz-checksum-type'] !== undefined) tree.ChecksumType = headers['x-amz-checksum-type'];
  return tree;
}

async function completeUpload(r: ObjectCall): Promise<void> {
  const { req, res, opts, claim, cred, key, query, fields } = r;
  const uploadId = query.uploadId!;
  if (!opts.store.findUpload(uploadId, cred.workspaceId, key)) {
    // Completed already: a client whose first answer was lost asks again, and
    // gets the same answer if it lists the same parts (S3 and RGW do the same).
    const done = opts.store.completedFrom(uploadId, cred.workspaceId, key);
    const parts = done && parseCompleteBody(await readSmallBody(req, res, claim, MAX_COMPLETE_BODY));
    if (!done || !parts || multipartEtag(parts.map((p) => p.etag)) !== done.etag) throw noSuchUpload();
    const kept = JSON.parse(done.headers) as Record<string, string>;
    return void sendXml(
      res,
      200,
      xmlDocument('CompleteMultipartUploadResult', completeResult(opts, key, done.etag, kept)),
    );
  }
  const upload = opts.store.upload(uploadId, cred.workspaceId, key);
  const check = writeCheck(readConditions(req.headers));
  check(opts.store.object(key)); // before the parts are put together; again when the object is written
  const listed = parseCompleteBody(await readSmallBody(req, res, claim, MAX_COMPLETE_BODY));
  const parts = opts.store.checkParts(upload, listed);
  const { checksum, rest } = takeMultipartChecksum(JSON.parse(upload.headers) as Record<string, string>);
  if (checksum && listed.some((p) => p.checksums[checksum.algorithm] === undefined)) {
    throw partWithoutChecksum(checksum);
  }
  // The checksum the client expects of the object, if it says one: only of the upload's algorithm.
  const expected = checksum && fields.get(checksumHeader(checksum.algorithm));
  for (const name of fields.keys()) {
    if (
      /^x-amz-checksum-(crc32|sha1|sha256)$/.test(name) &&
      name !== (checksum && checksumHeader(checksum.algorithm))
    ) {
      throw invalidRequest(
        `${name} does not match the checksum algorithm this upload was created with (none, or another).`,
      );
    }
  }
  // COMPOSITE comes from the part list: a wrong expectation is refused at once (plain 400);
  // FULL_OBJECT is known once the parts are put together (then an <Error> in the 200).
  const composite =
    checksum?.type === 'COMPOSITE'
      ? compositeChecksum(
          checksum.algorithm,
          listed.map((p) => p.checksums[checksum.algorithm]!),
        )
      : undefined;
  if (checksum && composite !== undefined && expected !== undefined && expected !== composite) {
    throw checksumMismatch(checksum.algorithm);
  }
  if (checksum?.type === 'FULL_OBJECT' && expected !== undefined)
    checkChecksumValue(checksum.algorithm, expected);
  const whole = checksum?.type === 'FULL_OBJECT' ? checksummer(checksum.algorithm) : undefined;
  let headers = rest;
  const work = opts.store.complete(upload, parts, {
    check,
    ...(whole ? { observe: (chunk: Buffer) => whole.update(chunk) } : {}),
    headers: () => {
      if (!checksum) return rest;
      const value = whole ? whole.value() : composite!;
      if (expected !== undefined && expected !== value) throw checksumMismatch(checksum.algorithm);
      headers = {
        ...rest,
        [checksumHeader(checksum.algorithm)]: value,
        'x-amz-checksum-type': checksum.type,
      };
      return headers;
    },
  });
  return answerWhileWorking(r, work, (etag) =>
    xmlElement('CompleteMultipartUploadResult', completeResult(opts, key, etag, headers)),
  );
}

function listParts(r: ObjectCall): void {
  const { res, opts, cred, key, query } = r;
  const uploadId = query.uploadId!;
  const upload = opts.store.upload(uploadId, cred.workspaceId, key);
  const marker = boundedInt(query['part-number-marker'], 'part-number-marker', 0, 10_000);
  const max = boundedInt(query['max-parts'], 'max-parts', 1000, 1000);
  const rows = opts.store.parts(upload.upload_id, marker, max + 1);
  const truncated = rows.length > max;
  const shown = rows.slice(0, max);
  sendXml(
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
        ...partChecksums(p.checksum),
      })),
    }),
  );
}

/** `{"crc32": "..."}` -> `{ChecksumCRC32: "..."}`, as ListParts shows a part's checksum. */
function partChecksums(stored: string | null): XmlTree {
  const out: XmlTree = {};
  if (stored === null) return out;
  for (const [algorithm, value] of Object.entries(JSON.parse(stored) as Record<string, string>)) {
    out[checksumElement(algorithm as ChecksumAlgorithm)] = value;
  }
  return out;
}

async function abortUpload(r: ObjectCall): Promise<void> {
  const { res, opts, cred, key, query } = r;
  await opts.store.abort(opts.store.upload(query.uploadId!, cred.workspaceId, key));
  res.writeHead(204);
  res.end();
}

/** What S3 keeps as the object's Content-Type (absent: application/octet-stream on GET). */
const contentType = (req: IncomingMessage): string | null => req.headers['content-type'] ?? null;

/** One request on an object, once authenticated. */
interface ObjectCall {
  req: IncomingMessage;
  res: ServerResponse;
  opts: S3ServerOptions;
  claim: Claim;
  cred: Credential;
  key: string;
  query: Query;
  fields: Map<string, string>;
  requestId: string;
}

/** The query parameters of each operation on an object; any other is refused (NotImplemented). */
const OBJECT_PARAMS: Record<
  Exclude<Operation, 'ListObjects' | 'HeadBucket' | 'GetBucketLocation'>,
  string[]
> = {
  PutObject: [],
  UploadPart: ['partNumber', 'uploadId'],
  CreateMultipartUpload: ['uploads'],
  CompleteMultipartUpload: ['uploadId'],
  AbortMultipartUpload: ['uploadId'],
  ListParts: ['uploadId', 'part-number-marker', 'max-parts'],
  GetObject: Object.keys(RESPONSE_OVERRIDES),
  HeadObject: Object.keys(RESPONSE_OVERRIDES),
};

async function objectRequest(r: ObjectCall): Promise<void> {
  checkKey(r.key, r.cred.prefix);
  const op = objectOperation(r.req.method ?? 'GET', r.query);
  allowOnly(r.query, OBJECT_PARAMS[op], op);
  checkFields(op, r.fields);
  switch (op) {
    case 'PutObject':
      return putObject(r);
    case 'UploadPart':
      return uploadPart(r);
    case 'CreateMultipartUpload':
      return createUpload(r);
    case 'CompleteMultipartUpload':
      return completeUpload(r);
    case 'ListParts':
      return listParts(r);
    case 'AbortMultipartUpload':
      return abortUpload(r);
    default:
      return getObject(r.req, r.res, r.opts.store, r.key, r.query);
  }
}

/**
 * Like S3 for a long CompleteMultipartUpload: answers 200 at once and sends
 * a space every few seconds until the work is done, then the result, or an
 * <Error> inside the 200 (which the SDKs read as an error). Neither the
 * client's read timeout nor our own idle timeout can cut a big assembly.
 */
async function answerWhileWorking<T>(
  r: ObjectCall,
  work: Promise<T>,
  result: (value: T) => string,
): Promise<void> {
  const { res, opts } = r;
  res.writeHead(200, { 'content-type': 'application/xml' });
  res.write(XML_DECLARATION);
  const timer = setInterval(() => res.write(' '), opts.completeKeepAliveMs);
  try {
    res.end(result(await work));
  } catch (err) {
    if (!(err instanceof S3Error)) opts.onInternalError(err);
    const s3 = err instanceof S3Error ? err : internalError();
    res.end(errorElement(s3, r.requestId, r.key));
  } finally {
    clearInterval(timer);
  }
}

const internalError = (): S3Error =>
  new S3Error(500, 'InternalError', 'We encountered an internal error. Please try again.');

/** The request handler of the bucket's HTTP server (also for 'checkContinue' and 'checkExpectation'). */
export function s3Handler(opts: S3ServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = newRequestId();
    res.setHeader('x-amz-request-id', requestId);
    const run = async (): Promise<void> => {
      const target = parseTarget(req, opts.bucket);
      const { claim, cred } = authenticate(req, target, opts);
      const fields = requestFields(req, target.query);
      if (target.key === '') return bucketRequest(req, res, opts, cred, target.query, fields);
      return objectRequest({
        req,
        res,
        opts,
        claim,
        cred,
        key: target.key,
        query: target.query,
        fields,
        requestId,
      });
    };
    run().catch((err: unknown) => {
      // A client that went away (timeout, hang-up) is no fault of ours.
      if (!(err instanceof S3Error) && !req.destroyed && !res.destroyed) opts.onInternalError(err);
      const s3 = err instanceof S3Error ? err : internalError();
      // A body that was not (fully) read cannot be followed by another request on this connection.
      sendError(res, s3, {
        head: req.method === 'HEAD',
        close: !req.complete,
        requestId,
        resource: req.url?.split('?')[0],
      });
    });
  };
}
