/**
 * Amazon S3 and MinIO, with @aws-sdk/client-s3. Our own multipart (not
 * lib-storage) so that an upload survives a restart: see transfer.ts.
 *
 * Client settings, and why:
 * - checksums WHEN_REQUIRED: the SDK's default CRC trailers use aws-chunked
 *   bodies that some S3-compatible stores (s3rver, older MinIO) store as is,
 *   i.e. corrupted; integrity comes from Content-MD5 instead.
 * - maxAttempts 1: the engine's queue owns retries (with backoff and
 *   persistence); the SDK could not replay our streamed bodies anyway.
 * - one keep-alive agent per uploader, shared by successive clients, so a
 *   credential refresh does not cut the parts in flight.
 * - the bytes themselves (PutObject, UploadPart) go through s3-put.ts: the
 *   SDK's signer without its per-request middleware cost.
 * - conditional writes: PutObject and CompleteMultipartUpload carry
 *   If-None-Match: *, so a write that is retried (a lost answer, a restart)
 *   cannot replace an object another writer completed meanwhile. The key
 *   holds the file's MD5 (keys.ts): an object found there with the file's
 *   size (and, when its ETag is a plain MD5, the file's MD5) is this file,
 *   and the upload is done; anything else is reported and left alone. A
 *   store that ignores the header (Ceph RGW 16 here) writes as before; one
 *   that refuses it (501) is asked again without it, and not asked again.
 */
import http from 'node:http';
import https from 'node:https';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Agent } from 'undici';
import { DmsError } from '../errors.js';
import { isCredentialFailure, networkCode, toBucketError } from './bucket-errors.js';
import type { BucketFailure } from './bucket-errors.js';
import { pacedBody } from './parts.js';
import { SignedPut } from './s3-put.js';
import { ClientSession } from './session.js';
import { resolveConfig, transfer } from './transfer.js';
import type { StorageBackend } from './transfer.js';
import type {
  BucketCredentials,
  BucketTarget,
  FinishedPart,
  Uploader,
  UploaderOptions,
  UploadRequest,
} from './types.js';

/** Reads code and status from whatever the SDK threw. */
export function s3Failure(err: unknown): BucketFailure {
  const e = (err ?? {}) as {
    name?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: number };
    $fault?: unknown;
  };
  const message = typeof e.message === 'string' ? e.message : String(err);
  const status = e.$metadata?.httpStatusCode;
  // An answer's code is the bucket's (S3's RequestTimeout is also a timeout code): it keeps its status.
  const net = status === undefined ? networkCode(err) : undefined;
  if (net !== undefined) return { code: net, message };
  // Only service exceptions carry the bucket's code in `name`; a TypeError's name is not a code.
  const isService = e.$fault !== undefined || status !== undefined;
  const code = isService && typeof e.name === 'string' ? e.name : undefined;
  return { ...(code !== undefined ? { code } : {}), ...(status !== undefined ? { status } : {}), message };
}

/**
 * Failures worth one credential refresh and one retry (session.ts): the
 * codes of expired or unknown credentials, and AccessDenied, which is what
 * Ceph's RADOS Gateway answers for an expired session token (its log says
 * "ERROR: Token expired"). A real refusal is still reported as one: the
 * retry with fresh credentials is refused again.
 */
function worthRefresh(err: unknown): boolean {
  const f = s3Failure(err);
  return isCredentialFailure(f) || f.code === 'AccessDenied';
}

const SILENT = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * Connections to one bucket, at most: for the bytes (PUTs beyond it wait
 * their turn, see SignedPut), and again for the SDK's few requests per file.
 * The embedded bucket, like the API, takes 64 from one client address; 32
 * parallel PUTs fill any uplink a crew has.
 */
export const MAX_DATA_CONNECTIONS = 32;
export const MAX_SDK_CONNECTIONS = 16;
const DEFAULT_STALL_TIMEOUT_MS = 120_000;

export function createS3Uploader(opts: UploaderOptions): Uploader {
  const cfg = resolveConfig(opts);
  const maxSockets = Math.min(MAX_DATA_CONNECTIONS, opts.maxSockets ?? Math.max(16, cfg.partConcurrency * 4));
  const sdkSockets = Math.min(MAX_SDK_CONNECTIONS, maxSockets);
  const ca = opts.ca;
  const httpAgent = new http.Agent({ keepAlive: true, maxSockets: sdkSockets });
  const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: sdkSockets, ...(ca ? { ca } : {}) });
  const dataAgent = new Agent({
    connections: maxSockets,
    keepAliveTimeout: 10_000,
    connect: { timeout: 15_000, ...(ca ? { ca } : {}) },
    allowH2: false, // HTTP/1.1 as the SDK's own requests (undici 8 would take HTTP/2 when offered)
  });
  // Idle limits, not totals (as the SDK's socketTimeout): slow links are fine. (undici's
  // headersTimeout counts from when a request starts, except while it is writing a streamed body:
  // hence streamed bodies only, see uploadPart.)
  const stallMs = opts.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  const signedPut = new SignedPut(dataAgent, { headersMs: stallMs, bodyMs: stallMs }, maxSockets);

  // The bucket's clock as the clients learnt it from its answers (their
  // systemClockOffset), carried over to the client built for new credentials.
  let clockOffset = 0;
  const build = (t: BucketTarget): S3Client =>
    new S3Client({
      systemClockOffset: clockOffset,
      region: t.region !== '' ? t.region : 'us-east-1',
      ...(t.endpoint !== '' ? { endpoint: t.endpoint } : {}),
      // MinIO serves buckets as paths, not as sub-domains.
      forcePathStyle: t.provider === 'minio',
      credentials: {
        accessKeyId: t.credentials.accessKeyId,
        secretAccessKey: t.credentials.secretAccessKey,
        ...(t.credentials.sessionToken !== '' ? { sessionToken: t.credentials.sessionToken } : {}),
      },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 1,
      // Failures are classified and reported by us; the SDK must not print to the console.
      logger: SILENT,
      // An idle limit on the socket, not a total: slow links are fine. (requestTimeout was that
      // once; since @smithy/node-http-handler 4.x it is a total that only warns, to a silent
      // logger here: a request on a dead kept-alive connection then waited for ever.)
      requestHandler: { httpAgent, httpsAgent, connectionTimeout: 15_000, socketTimeout: stallMs },
    });
  const session = new ClientSession<S3Client>(opts.target, build, worthRefresh);

  /** One request through the session; anything thrown leaves as DmsError. */
  async function call<T>(
    op: string,
    key: string,
    signal: AbortSignal | undefined,
    fn: (client: S3Client, t: BucketTarget) => Promise<T>,
  ): Promise<T> {
    let credentials: BucketCredentials | undefined;
    try {
      return await session.run(key, signal, async (client, t) => {
        credentials = t.credentials;
        try {
          return await fn(client, t);
        } catch (err) {
          // The refusal set the client's clock to the bucket's: once more, now in time.
          if (signal?.aborted === true || s3Failure(err).code !== 'RequestTimeTooSkewed') throw err;
          return await fn(client, t);
        } finally {
          clockOffset = client.config.systemClockOffset;
        }
      });
    } catch (err) {
      throw toBucketError(err, s3Failure(err), {
        op,
        key,
        ...(signal ? { signal } : {}),
        ...(credentials ? { credentials } : {}),
      });
    }
  }

  const abortOpt = (signal: AbortSignal | undefined): { abortSignal?: AbortSignal } =>
    signal ? { abortSignal: signal } : {};

  async function stat(
    key: string,
    signal?: AbortSignal,
  ): Promise<{ size: number; etag: string | null } | null> {
    try {
      const head = await call('HeadObject', key, signal, (c, t) =>
        c.send(new HeadObjectCommand({ Bucket: t.bucket, Key: key }), abortOpt(signal)),
      );
      return { size: head.ContentLength ?? -1, etag: head.ETag ? head.ETag.replace(/"/g, '') : null };
    } catch (err) {
      if (err instanceof DmsError && err.status === 404) return null;
      throw err;
    }
  }

  /** ListObjectsV2 of one folder and its sub-folders, page by page; null past maxKeys. */
  async function list(
    folder: string,
    maxKeys: number,
    signal?: AbortSignal,
  ): Promise<Map<string, { size: number; etag: string | null }> | null> {
    const found = new Map<string, { size: number; etag: string | null }>();
    let token: string | undefined;
    do {
      // Checked as the folder's own key: under the target's prefix, no empty or dot segment.
      const page = await call('ListObjectsV2', folder.replace(/\/$/, ''), signal, (c, t) =>
        c.send(
          new ListObjectsV2Command({
            Bucket: t.bucket,
            Prefix: folder,
            ...(token ? { ContinuationToken: token } : {}),
          }),
          abortOpt(signal),
        ),
      );
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined) continue;
        found.set(o.Key, { size: o.Size ?? -1, etag: o.ETag ? o.ETag.replace(/"/g, '') : null });
      }
      if (found.size > maxKeys) return null;
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token);
    return found;
  }

  // Whether the store takes If-None-Match (see the top of this file).
  let conditional = true;
  /**
   * The write with If-None-Match: * where the store takes it; 'exists' when
   * an object is already there. A bucket may refuse early, before the body
   * is sent, and close the connection: the client then sees the connection
   * cut (EPIPE, reset) instead of the 412. Such a cut is asked about (HEAD)
   * before it is taken for the network: a refusal is never "the server
   * cannot be reached".
   */
  async function exclusive<T>(
    key: string,
    signal: AbortSignal | undefined,
    write: (ifNoneMatch: boolean) => Promise<T>,
  ): Promise<T | 'exists'> {
    if (conditional) {
      try {
        return await write(true);
      } catch (err) {
        if (err instanceof DmsError && err.kind === 'network' && signal?.aborted !== true) {
          const found = await stat(key, signal).catch(() => null);
          if (found !== null) return 'exists';
        }
        if (!(err instanceof DmsError) || (err.status !== 412 && err.status !== 501)) throw err;
        if (err.status === 412) return 'exists';
        conditional = false;
      }
    }
    return write(false);
  }

  /** The ETag of the object already at the key if it is this file, else a refusal to replace it. */
  async function alreadyThere(op: string, req: UploadRequest, md5Hex?: string): Promise<string | undefined> {
    const found = await stat(req.key, req.signal);
    const plainMd5 = found?.etag != null && /^[0-9a-f]{32}$/.test(found.etag);
    if (found && found.size === req.size && (md5Hex === undefined || !plainMd5 || found.etag === md5Hex)) {
      return found.etag !== null ? `"${found.etag}"` : undefined;
    }
    throw new DmsError(
      'storage',
      `The bucket already holds another object at ${req.key} (${found ? `${found.size} bytes` : 'gone since'}); it was not replaced.`,
      {
        method: op,
        path: req.key,
        status: 412,
        serverCode: 'PreconditionFailed',
        retryable: found === null,
        plain:
          'Another upload put a different file where this one goes; it was left as it is. ' +
          'Ask whoever manages the bucket to check that object.',
      },
    );
  }
  const required = (value: string | undefined, op: string): string => {
    if (value === undefined || value === '') {
      throw new DmsError('malformed-response', `The bucket's answer to ${op} lacks its identifier.`, {
        method: op,
      });
    }
    return value;
  };

  const backend: StorageBackend = {
    async putObject(req, body, md5, onChunk) {
      const put = (ifNoneMatch: boolean) =>
        call('PutObject', req.key, req.signal, (c, t) =>
          signedPut.send(c, t, {
            key: req.key,
            // A new paced stream per attempt: a credential retry sends the body again.
            body: () => pacedBody(body, { throttle: opts.throttle, signal: req.signal, onChunk, stallMs }),
            length: body.length,
            md5,
            ifNoneMatch,
            ...(req.contentType !== undefined ? { contentType: req.contentType } : {}),
            ...(req.signal ? { signal: req.signal } : {}),
          }),
        );
      // A manifest's living file (report, chain) is rewritten by each generation.
      if (req.replace === true) return { etag: await put(false), written: true };
      const etag = await exclusive(req.key, req.signal, put);
      return etag === 'exists'
        ? {
            etag: await alreadyThere('PutObject', req, Buffer.from(md5, 'base64').toString('hex')),
            written: false,
          }
        : { etag, written: true };
    },

    async createMultipart(req) {
      const out = await call('CreateMultipartUpload', req.key, req.signal, (c, t) =>
        c.send(
          new CreateMultipartUploadCommand({
            Bucket: t.bucket,
            Key: req.key,
            ...(req.contentType !== undefined ? { ContentType: req.contentType } : {}),
          }),
          abortOpt(req.signal),
        ),
      );
      return required(out.UploadId, 'CreateMultipartUpload');
    },

    async uploadPart(req, uploadId, partNumber, body, md5, signal) {
      const etag = await call('UploadPart', req.key, signal, (c, t) =>
        signedPut.send(c, t, {
          key: req.key,
          // Streamed even without a limit: undici takes a Buffer as sent once it is handed to the
          // socket, and its headers timeout then cuts a part still draining up a slow uplink.
          body: () => pacedBody(body, { throttle: opts.throttle, signal, stream: true, stallMs }),
          length: body.length,
          md5,
          part: { uploadId, partNumber },
          ...(signal ? { signal } : {}),
        }),
      );
      return required(etag, 'UploadPart');
    },

    async listParts(req, uploadId) {
      const parts: FinishedPart[] = [];
      let marker: string | undefined;
      for (;;) {
        const out = await call('ListParts', req.key, req.signal, (c, t) =>
          c.send(
            new ListPartsCommand({
              Bucket: t.bucket,
              Key: req.key,
              UploadId: uploadId,
              ...(marker !== undefined ? { PartNumberMarker: marker } : {}),
            }),
            abortOpt(req.signal),
          ),
        );
        for (const p of out.Parts ?? []) {
          if (p.PartNumber !== undefined && p.ETag !== undefined && p.Size !== undefined) {
            parts.push({ partNumber: p.PartNumber, etag: p.ETag, size: p.Size });
          }
        }
        if (out.IsTruncated !== true || out.NextPartNumberMarker === undefined) return parts;
        marker = out.NextPartNumberMarker;
      }
    },

    async completeMultipart(req, uploadId, parts) {
      const out = await exclusive(req.key, req.signal, (ifNoneMatch) =>
        call('CompleteMultipartUpload', req.key, req.signal, (c, t) =>
          c.send(
            new CompleteMultipartUploadCommand({
              Bucket: t.bucket,
              Key: req.key,
              UploadId: uploadId,
              MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
              ...(ifNoneMatch ? { IfNoneMatch: '*' } : {}),
            }),
            abortOpt(req.signal),
          ),
        ),
      );
      if (out !== 'exists') return out.ETag;
      // The parts are not needed any more, whatever is there: best effort.
      await call('AbortMultipartUpload', req.key, req.signal, (c, t) =>
        c.send(new AbortMultipartUploadCommand({ Bucket: t.bucket, Key: req.key, UploadId: uploadId })),
      ).catch(() => undefined);
      return alreadyThere('CompleteMultipartUpload', req);
    },
  };

  return {
    upload: (req: UploadRequest) => transfer(backend, req, cfg),

    async exists(key, signal) {
      return (await this.stat(key, signal)) !== null;
    },

    stat,
    list,

    close() {
      session.forget();
      httpAgent.destroy();
      httpsAgent.destroy();
      void dataAgent.destroy().catch(() => undefined);
    },
  };
}
