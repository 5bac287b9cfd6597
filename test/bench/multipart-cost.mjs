#!/usr/bin/env node
// What CompleteMultipartUpload costs the embedded bucket: it concatenates the
// parts into the object and computes the whole object's MD5 on the way (kept
// for upload callbacks). Uploads 304 MiB and 2 GiB in 8 MiB parts (the
// agent's default) to a fresh service, times Complete, and times MD5 alone
// over the same bytes in memory for the hash's share. Run after `npm run build`:
//   node test/bench/multipart-cost.mjs
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { startService } = await import(
  pathToFileURL(path.join(REPO, 'dist', 'main', 'service', 'index.js')).href
);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-multipart-cost-'));
const service = await startService({ dataDir: dir, logger: false });
try {
  const res = await globalThis.fetch(
    `${service.baseUrl}/storage/api/v1/workspaces/${service.workspaceId}/sts`,
    {
      method: 'POST',
      headers: { 'x-auth-token': service.token },
    },
  );
  const sts = (await res.json()).data;
  const client = new S3Client({
    endpoint: sts.endpoint,
    region: sts.region,
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: {
      accessKeyId: sts.credentials.access_key_id,
      secretAccessKey: sts.credentials.access_key_secret,
      sessionToken: sts.credentials.security_token,
    },
  });
  const part = randomBytes(8 * 1024 * 1024);
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}`,
  );
  for (const count of [38, 256]) {
    const Key = `${sts.object_key_prefix}/cost-${count}.mp4`;
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key }));
    const Parts = [];
    for (let n = 1; n <= count; n++) {
      const out = await client.send(
        new UploadPartCommand({ Bucket: sts.bucket, Key, UploadId, PartNumber: n, Body: part }),
      );
      Parts.push({ PartNumber: n, ETag: out.ETag });
    }
    const started = performance.now();
    await client.send(
      new CompleteMultipartUploadCommand({ Bucket: sts.bucket, Key, UploadId, MultipartUpload: { Parts } }),
    );
    const completeMs = performance.now() - started;
    const hashStarted = performance.now();
    const hash = createHash('md5');
    for (let n = 0; n < count; n++) hash.update(part);
    hash.digest();
    const md5Ms = performance.now() - hashStarted;
    const mib = count * 8;
    console.log(
      `${mib} MiB: Complete ${completeMs.toFixed(0)} ms (${((completeMs / mib) * 100).toFixed(0)} ms per 100 MiB), ` +
        `of which MD5 alone ${md5Ms.toFixed(0)} ms`,
    );
  }
  client.destroy();
} finally {
  await service.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
