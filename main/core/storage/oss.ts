/**
 * Alibaba Cloud OSS, with ali-oss. Same algorithm as S3 (transfer.ts); only
 * the calls and the error shapes differ.
 *
 * - The client is rebuilt when the target changes (see session.ts) rather
 *   than using ali-oss's `refreshSTSToken` timer: one refresh path for all
 *   providers, driven by the bucket's own "expired" answers.
 * - ali-oss has no per-request AbortSignal: bodies are always streams that
 *   die on abort (parts.ts pacedBody), so a cancelled part ends at once;
 *   other calls are short and awaited.
 * - The client constructor is injectable (`createClient`) because Alibaba's
 *   cloud cannot run in tests: they use a fake client.
 */
import https from 'node:https';
import type { Readable } from 'node:stream';
import OSS from 'ali-oss';
import { DmsError } from '../errors.js';
import { isCredentialFailure, networkCode, toBucketError } from './bucket-errors.js';
import type { BucketFailure } from './bucket-errors.js';
import { pacedBody, type BodySource } from './parts.js';
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

type Body = Buffer | Readable;
type Headers = Record<string, string | number>;

/** The part of the ali-oss client we use (ali-oss's own shapes, loosely typed where its XML is). */
export interface OssClient {
  put(
    name: string,
    file: Body,
    options?: { headers?: Headers; mime?: string; contentLength?: number },
  ): Promise<{ res?: { headers?: unknown } }>;
  head(name: string): Promise<unknown>;
  initMultipartUpload(name: string, options?: { mime?: string }): Promise<{ uploadId: string }>;
  uploadPart(
    name: string,
    uploadId: string,
    partNo: number,
    file: Body,
    start: number,
    end: number,
    options?: { headers?: Headers },
  ): Promise<{ etag: string }>;
  listParts(
    name: string,
    uploadId: string,
    query?: Record<string, string | number>,
  ): Promise<{ parts?: unknown; isTruncated?: unknown; nextPartNumberMarker?: unknown }>;
  completeMultipartUpload(
    name: string,
    uploadId: string,
    parts: Array<{ number: number; etag: string }>,
  ): Promise<{ etag?: string }>;
}

export type OssClientFactory = (options: OSS.Options) => OssClient;

export interface OssUploaderOptions extends UploaderOptions {
  /** Builds the client; tests pass a fake. Default: `new OSS(options)`. */
  createClient?: OssClientFactory;
}

// ali-oss's real class satisfies OssClient at run time; its typings are wider.
const defaultFactory: OssClientFactory = (options) => new OSS(options) as unknown as OssClient;

/** Reads code and status from an ali-oss error (network errors: status -1 / -2). */
export function ossFailure(err: unknown): BucketFailure {
  const e = (err ?? {}) as { code?: unknown; status?: unknown; message?: unknown };
  const message = typeof e.message === 'string' ? e.message : String(err);
  const net = networkCode(err);
  if (net !== undefined) return { code: net, message };
  const status = typeof e.status === 'number' && e.status > 0 ? e.status : undefined;
  const code = typeof e.code === 'string' && e.code !== '' ? e.code : undefined;
  return { ...(code !== undefined ? { code } : {}), ...(status !== undefined ? { status } : {}), message };
}

export function ossClientOptions(t: BucketTarget): OSS.Options {
  const c = t.credentials;
  return {
    accessKeyId: c.accessKeyId,
    accessKeySecret: c.secretAccessKey,
    ...(c.sessionToken !== '' ? { stsToken: c.sessionToken } : {}),
    bucket: t.bucket,
    ...(t.region !== '' ? { region: t.region } : {}),
    ...(t.endpoint !== '' ? { endpoint: t.endpoint } : {}),
    secure: !t.endpoint.startsWith('http://'),
    // A whole-request timeout in ali-oss: leave room for a part on a slow field link.
    timeout: 10 * 60_000,
  };
}

const etagOf = (res: { headers?: unknown } | undefined): string | undefined => {
  const h = res?.headers as { etag?: unknown } | undefined;
  return typeof h?.etag === 'string' ? h.etag : undefined;
};

export function createOssUploader(opts: OssUploaderOptions): Uploader {
  const cfg = resolveConfig(opts);
  const factory = opts.createClient ?? defaultFactory;
  // A configured CA (self-hosted, OSS-compatible): trusted in place of Node's default list.
  const httpsAgent = opts.ca ? new https.Agent({ keepAlive: true, ca: opts.ca }) : undefined;
  const session = new ClientSession<OssClient>(
    opts.target,
    (t) => factory({ ...ossClientOptions(t), ...(httpsAgent ? { httpsAgent } : {}) }),
    (err) => isCredentialFailure(ossFailure(err)),
  );

  async function call<T>(
    op: string,
    key: string,
    signal: AbortSignal | undefined,
    fn: (client: OssClient) => Promise<T>,
  ): Promise<T> {
    let credentials: BucketCredentials | undefined;
    try {
      return await session.run(key, signal, (client, t) => {
        credentials = t.credentials;
        return fn(client);
      });
    } catch (err) {
      throw toBucketError(err, ossFailure(err), {
        op,
        key,
        ...(signal ? { signal } : {}),
        ...(credentials ? { credentials } : {}),
      });
    }
  }

  // Always a stream (never the bare Buffer): only a stream can be cut on abort.
  const body = (
    buf: BodySource,
    signal: AbortSignal | undefined,
    onChunk: (sent: number) => void = () => undefined,
  ): Promise<Body> => pacedBody(buf, { throttle: opts.throttle, signal, onChunk });
  const mime = (req: UploadRequest): { mime?: string } =>
    req.contentType !== undefined ? { mime: req.contentType } : {};

  const backend: StorageBackend = {
    async putObject(req, buf, md5, onChunk) {
      const out = await call('PutObject', req.key, req.signal, async (c) =>
        c.put(req.key, await body(buf, req.signal, onChunk), {
          headers: { 'Content-MD5': md5 },
          contentLength: buf.length,
          ...mime(req),
        }),
      );
      return { etag: etagOf(out.res), written: true };
    },

    async createMultipart(req) {
      const out = await call('InitiateMultipartUpload', req.key, req.signal, (c) =>
        c.initMultipartUpload(req.key, mime(req)),
      );
      if (typeof out.uploadId !== 'string' || out.uploadId === '') {
        throw new DmsError(
          'malformed-response',
          "The bucket's answer to InitiateMultipartUpload lacks the upload id.",
        );
      }
      return out.uploadId;
    },

    async uploadPart(req, uploadId, partNumber, buf, md5, signal) {
      const out = await call('UploadPart', req.key, signal, async (c) =>
        c.uploadPart(req.key, uploadId, partNumber, await body(buf, signal), 0, buf.length, {
          headers: { 'Content-MD5': md5 },
        }),
      );
      if (typeof out.etag !== 'string' || out.etag === '') {
        // ali-oss's own hint: the bucket's CORS rules must expose ETag.
        throw new DmsError('malformed-response', 'The bucket did not return the ETag of an uploaded part.');
      }
      return out.etag;
    },

    async listParts(req, uploadId) {
      const parts: FinishedPart[] = [];
      let marker: string | number | undefined;
      for (;;) {
        const query: Record<string, string | number> = { 'max-parts': 1000 };
        if (marker !== undefined) query['part-number-marker'] = marker;
        const out = await call('ListParts', req.key, req.signal, (c) =>
          c.listParts(req.key, uploadId, query),
        );
        // ali-oss parses XML loosely: one part is an object, numbers are strings.
        const raw =
          out.parts === undefined ? [] : Array.isArray(out.parts) ? (out.parts as unknown[]) : [out.parts];
        for (const p of raw as Array<Record<string, unknown>>) {
          const partNumber = Number(p.PartNumber);
          const size = Number(p.Size ?? p.size);
          if (Number.isSafeInteger(partNumber) && Number.isSafeInteger(size) && typeof p.ETag === 'string') {
            parts.push({ partNumber, etag: p.ETag, size });
          }
        }
        const truncated = out.isTruncated === true || out.isTruncated === 'true';
        const next = out.nextPartNumberMarker;
        if (!truncated || (typeof next !== 'string' && typeof next !== 'number') || next === marker)
          return parts;
        marker = next;
      }
    },

    async completeMultipart(req, uploadId, parts) {
      const out = await call('CompleteMultipartUpload', req.key, req.signal, (c) =>
        c.completeMultipartUpload(
          req.key,
          uploadId,
          parts.map((p) => ({ number: p.partNumber, etag: p.etag })),
        ),
      );
      return out.etag;
    },
  };

  return {
    upload: (req: UploadRequest) => transfer(backend, req, cfg),

    async exists(key, signal) {
      return (await this.stat(key, signal)) !== null;
    },

    async stat(key, signal) {
      try {
        const head = await call('HeadObject', key, signal, (c) => c.head(key));
        const headers =
          (head as { res?: { headers?: Record<string, string | undefined> } }).res?.headers ?? {};
        const etag = headers['etag'];
        return { size: Number(headers['content-length'] ?? -1), etag: etag ? etag.replace(/"/g, '') : null };
      } catch (err) {
        if (err instanceof DmsError && err.status === 404) return null;
        throw err;
      }
    },

    close() {
      session.forget();
      httpsAgent?.destroy();
    },
  };
}
