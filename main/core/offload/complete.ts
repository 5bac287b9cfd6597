/**
 * A source whose sync came to rest: its objects checked in the bucket, its
 * verdict ("safe to format" or why not), and its manifest written to the
 * state folder and uploaded next to its files. The agent never formats or
 * deletes anything: this only tells.
 */
import fs from 'node:fs';
import path from 'node:path';
import { toDmsError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Queue } from '../queue/queue.js';
import type { BucketPort } from '../storage/types.js';
import { cardOffload, type CardOffload, type CardRef } from './card.js';
import { TOOL } from '../version.js';
import { manifestFolder, writeManifest, type Published } from './publish.js';
import { verifySource } from './verify.js';

export { TOOL } from '../version.js';

export interface Completed {
  offload: CardOffload;
  manifest: Published;
  /** Why the manifest could not be uploaded (it is kept in the state folder), or null. */
  uploadProblem: string | null;
}

export async function completeSource(o: {
  queue: Queue;
  /** The current target's bucket: objects looked up, the manifest written. */
  bucket: BucketPort;
  card: CardRef;
  manifestsDir: string;
  /** Objects last checked longer ago than this are looked at again (config.recheckAfterMinutes). */
  recheckAfterMs: number;
  log: Logger;
  signal?: AbortSignal;
}): Promise<Completed> {
  await verifySource(o, o.card.sourceId, {
    olderThanMs: o.recheckAfterMs,
    ...(o.signal ? { signal: o.signal } : {}),
  });
  const offload = cardOffload(o.queue, o.card);
  const manifest = writeManifest(o.manifestsDir, offload, TOOL);
  let uploadProblem: string | null = null;
  if (manifest.changed) {
    try {
      const folder = `manifests/${manifestFolder(offload)}`;
      for (const f of manifest.files)
        await o.bucket.put(folder, f, fs.readFileSync(path.join(manifest.dir, f)), contentType(f), o.signal);
    } catch (err) {
      const e = toDmsError(err);
      uploadProblem = `The manifest of ${o.card.label} is in ${manifest.dir} but could not be uploaded: ${e.message}`;
      o.log.warn({ source: o.card.sourceId, kind: e.kind }, uploadProblem);
    }
  }
  return { offload, manifest, uploadProblem };
}

function contentType(file: string): string {
  if (file.endsWith('.html')) return 'text/html; charset=utf-8';
  if (file.endsWith('.json')) return 'application/json';
  return 'application/xml';
}
