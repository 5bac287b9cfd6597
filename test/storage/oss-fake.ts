/**
 * A FAKE Alibaba OSS client for the OSS uploader tests. Alibaba's cloud
 * cannot run here (there is no local OSS server like s3rver), so this mock
 * stands in for ali-oss: it keeps objects and multipart uploads in memory,
 * consumes bodies like ali-oss does (Buffer or stream, Content-Length and
 * Content-MD5 checked), and throws errors shaped like ali-oss's own
 * (`name: '<Code>Error'`, `code`, `status`, and `params` carrying the
 * request headers — security token included, as the real library does).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type OSS from 'ali-oss';
import type { OssClient, OssClientFactory } from '../../main/core/storage/oss.js';

type Body = Buffer | Readable;

export interface FakeCloud {
  objects: Map<string, Buffer>;
  uploads: Map<string, { name: string; parts: Map<number, { buf: Buffer; etag: string }> }>;
  /** Access key ids the cloud accepts, and security tokens that have expired. */
  validKeys: Set<string>;
  expiredTokens: Set<string>;
  /** Next failures to throw, by method name. */
  failNext: Array<{ method: keyof OssClient; err: Error }>;
  /** Parts per ListParts page (ali-oss/OSS paginate; small here to exercise it). */
  pageSize: number;
  calls: Array<{ method: string; partNo?: number; bytes?: number }>;
  clientOptions: OSS.Options[];
}

export function fakeCloud(): FakeCloud {
  return {
    objects: new Map(),
    uploads: new Map(),
    validKeys: new Set(['GOOD']),
    expiredTokens: new Set(),
    failNext: [],
    pageSize: 2,
    calls: [],
    clientOptions: [],
  };
}

/** An error the way ali-oss builds one from an OSS XML answer. */
export function ossError(code: string, status: number, token = ''): Error {
  // Some gateways echo the request's token in the message: it must be redacted on our side.
  const err = new Error(`${code} message${token !== '' ? ` (token ${token})` : ''}`) as Error &
    Record<string, unknown>;
  err.name = `${code}Error`;
  err.code = code;
  err.status = status;
  err.params = { headers: { 'x-oss-security-token': token } };
  return err;
}

/** A network failure the way ali-oss reports one (status -1, name RequestError...). */
export function ossNetworkError(name: string): Error {
  const err = new Error(`${name}: connect ECONNREFUSED`) as Error & Record<string, unknown>;
  err.name = name;
  err.code = name;
  err.status = name === 'ConnectionTimeoutError' ? -2 : -1;
  return err;
}

async function consume(body: Body): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const md5 = (buf: Buffer, enc: 'hex' | 'base64'): string => createHash('md5').update(buf).digest(enc);

export function fakeFactory(cloud: FakeCloud): OssClientFactory {
  return (options) => {
    cloud.clientOptions.push(options);
    const token = options.stsToken ?? '';
    const gate = (method: keyof OssClient): void => {
      const i = cloud.failNext.findIndex((f) => f.method === method);
      if (i >= 0) throw cloud.failNext.splice(i, 1)[0]!.err;
      if (!cloud.validKeys.has(options.accessKeyId)) throw ossError('InvalidAccessKeyId', 403, token);
      if (cloud.expiredTokens.has(token)) throw ossError('SecurityTokenExpired', 403, token);
    };
    const checkBody = (
      buf: Buffer,
      length: number,
      headers: Record<string, string | number> | undefined,
    ): void => {
      if (buf.length !== length) throw ossError('IncompleteBody', 400);
      if (headers?.['Content-MD5'] !== md5(buf, 'base64')) throw ossError('InvalidDigest', 400);
    };
    const upload = (uploadId: string) => {
      const u = cloud.uploads.get(uploadId);
      if (!u) throw ossError('NoSuchUpload', 404, token);
      return u;
    };
    const client: OssClient = {
      async put(name, file, opts) {
        const buf = await consume(file);
        gate('put');
        checkBody(buf, opts?.contentLength ?? buf.length, opts?.headers);
        cloud.calls.push({ method: 'put', bytes: buf.length });
        cloud.objects.set(name, buf);
        return { res: { headers: { etag: `"${md5(buf, 'hex').toUpperCase()}"` } } };
      },
      head(name) {
        gate('head');
        if (!cloud.objects.has(name)) return Promise.reject(ossError('NoSuchKey', 404));
        return Promise.resolve({ status: 200 });
      },
      initMultipartUpload(name) {
        gate('initMultipartUpload');
        const uploadId = randomUUID();
        cloud.uploads.set(uploadId, { name, parts: new Map() });
        cloud.calls.push({ method: 'initMultipartUpload' });
        return Promise.resolve({ uploadId });
      },
      async uploadPart(_name, uploadId, partNo, file, start, end, opts) {
        const buf = await consume(file);
        gate('uploadPart');
        checkBody(buf, end - start, opts?.headers);
        const etag = `"${md5(buf, 'hex').toUpperCase()}"`;
        upload(uploadId).parts.set(partNo, { buf, etag });
        cloud.calls.push({ method: 'uploadPart', partNo, bytes: buf.length });
        return { etag };
      },
      listParts(_name, uploadId, query) {
        gate('listParts');
        const marker = Number(query?.['part-number-marker'] ?? 0);
        const all = [...upload(uploadId).parts.entries()]
          .sort(([a], [b]) => a - b)
          .filter(([n]) => n > marker);
        const page = all.slice(0, cloud.pageSize);
        // ali-oss returns the XML as parsed: strings, and a lone part as an object, not a list.
        const parts = page.map(([n, p]) => ({
          PartNumber: String(n),
          ETag: p.etag,
          Size: String(p.buf.length),
          LastModified: '',
        }));
        return Promise.resolve({
          parts: parts.length === 1 ? parts[0] : parts,
          isTruncated: all.length > page.length ? 'true' : 'false',
          nextPartNumberMarker: page.length > 0 ? String(page[page.length - 1]![0]) : '',
        });
      },
      completeMultipartUpload(name, uploadId, parts) {
        gate('completeMultipartUpload');
        const u = upload(uploadId);
        const bufs = parts.map((p, i) => {
          const stored = u.parts.get(p.number);
          if (!stored || stored.etag !== p.etag || (i > 0 && parts[i - 1]!.number >= p.number))
            throw ossError('InvalidPart', 400);
          return stored.buf;
        });
        cloud.objects.set(name, Buffer.concat(bufs));
        cloud.uploads.delete(uploadId);
        cloud.calls.push({ method: 'completeMultipartUpload' });
        return Promise.resolve({ etag: `"MULTI-${parts.length}"` });
      },
    };
    return client;
  };
}
