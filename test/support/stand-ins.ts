/**
 * Stand-ins for the unit tests of the engine and the agent (no server, no
 * other process): a server whose answers each test scripts and whose calls
 * it logs in order, and a bucket in memory. The server-backed suites run the
 * same code against the real reference service and its bucket.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ApiClient } from '../../main/core/api/client.js';
import type { FastUploadOutcome, StsResult } from '../../main/core/api/types.js';
import type { Uploader, UploadRequest } from '../../main/core/storage/types.js';

/** An answer comes on a later turn of the event loop, as over a socket. */
const later = () => new Promise<void>((resolve) => setImmediate(resolve));

export const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');

export const STS: StsResult = {
  bucket: 'media',
  endpoint: 'http://127.0.0.1:1',
  region: 'us-east-1',
  provider: 'minio',
  object_key_prefix: 'ws',
  credentials: { access_key_id: 'k', access_key_secret: 's', security_token: 't', expire: 3600 },
};

/** A server whose every answer the test scripts; it logs the calls in order. */
export function standIn() {
  const calls: string[] = [];
  const known = new Set<string>();
  const script = {
    fastUpload: (_fp: string): FastUploadOutcome | Error | null => null,
    callback: (_fp: string): Error | null => null,
  };
  const api = {
    baseUrl: 'http://stand-in',
    workspaceId: 'ws',
    getSts: async () => {
      await later();
      calls.push('sts');
      return STS;
    },
    fastUpload: async (body: { fingerprint: string }) => {
      await later();
      calls.push(`fast-upload ${body.fingerprint.slice(0, 4)}`);
      const scripted = script.fastUpload(body.fingerprint);
      if (scripted instanceof Error) throw scripted;
      if (scripted) return scripted;
      return known.has(body.fingerprint)
        ? { known: true, code: 0, message: 'success' }
        : { known: false, code: 404001, message: 'not known' };
    },
    uploadCallback: async (body: { fingerprint: string }) => {
      await later();
      calls.push(`callback ${body.fingerprint.slice(0, 4)}`);
      known.add(body.fingerprint);
      const scripted = script.callback(body.fingerprint);
      if (scripted) throw scripted;
      return {};
    },
  } as unknown as ApiClient;
  return { api, calls, known, script };
}

/** A bucket in memory: what the uploader stored, by key. */
export function memoryBucket(calls: string[]) {
  const objects = new Map<string, Buffer>();
  const uploader: Uploader = {
    async upload(req: UploadRequest) {
      await later();
      const body = req.content ?? fs.readFileSync(req.filePath);
      calls.push(`put ${path.posix.basename(req.key)}`);
      objects.set(req.key, body);
      req.onProgress?.(body.length);
      return { key: req.key, etag: md5(body), bytesSent: body.length, multipart: false };
    },
    exists: async (key) => {
      await later();
      return objects.has(key);
    },
    stat: async (key) => {
      await later();
      const b = objects.get(key);
      return b ? { size: b.length, etag: md5(b) } : null;
    },
    close: () => undefined,
  };
  return { objects, create: () => uploader };
}
