/**
 * A source whose sync came to rest: its objects checked in the bucket, its
 * verdict ("safe to format" or why not), and its manifest written to the
 * state folder and uploaded next to its files. The agent never formats or
 * deletes anything: this only tells.
 */
import path from 'node:path';
import { plainMessage, toDmsError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Queue } from '../queue/queue.js';
import type { BucketPort } from '../storage/types.js';
import { stillThere } from '../copies/locally-safe.js';
import { writeDestinationHistories } from '../copies/mhl.js';
import type { Destination } from '../queue/copies.js';
import { cardOffload, checksDueBefore, type CardOffload, type CardRef, type FlightOptions } from './card.js';
import type { RunStopped } from './types.js';
import { TOOL } from '../version.js';
import { manifestFolder, markUploaded, writeManifest, type Published } from './publish.js';
import { verifySource } from './verify.js';

export { TOOL } from '../version.js';

export interface Completed {
  offload: CardOffload;
  manifest: Published;
  /** Why the manifest could not be uploaded (it is kept in the state folder), or null. */
  uploadProblem: string | null;
}

/**
 * A card's copies came to rest (every file of it read and copied): the local
 * verdict, and one more generation of each destination's ASC MHL history.
 * No server is needed: this is what frees a card at the speed of the card.
 */
export function completeLocal(o: {
  queue: Queue;
  card: CardRef;
  destinations: readonly Destination[];
  flights?: FlightOptions;
}): {
  offload: CardOffload;
  histories: string[];
} {
  const offload = cardOffload(o.queue, o.card, o.destinations, o.flights);
  const copies = o.queue.copies.ofSource(o.card.sourceId);
  const byKey = new Map(copies.map((c) => [`${c.destinationId}|${c.relPath}`, c]));
  const histories = writeDestinationHistories({
    copies,
    // Each card folder where its copies are (the label the card had when it was copied).
    destinations: o.queue.copies.destinations().flatMap((d) => {
      const c = copies.find((x) => x.destinationId === d.id && x.path.endsWith(x.relPath));
      return c
        ? [{ id: d.id, label: d.label, root: c.path.slice(0, c.path.length - c.relPath.length - 1) }]
        : [];
    }),
    card: o.card,
    tool: TOOL,
    intact: (c) => {
      const rec = byKey.get(`${c.destinationId}|${c.relPath}`);
      return rec !== undefined && stillThere(rec);
    },
  });
  return { offload, histories };
}

export async function completeSource(o: {
  queue: Queue;
  /** The local destinations in force. */
  destinations?: readonly Destination[];
  /** The current target's bucket: objects looked up, the manifest written. */
  bucket: BucketPort;
  card: CardRef;
  manifestsDir: string;
  /** Objects last checked longer ago than this are looked at again (config.recheckAfterMinutes). */
  recheckAfterMs: number;
  log: Logger;
  signal?: AbortSignal;
  /**
   * The run gave up on a server that never answered (issue 30): the verdict
   * and manifest are made from the queue, without asking the bucket (each
   * question would wait out the same silence again).
   */
  serverDown?: boolean;
  /** The run ended with files not sent: why (see RunStopped). */
  stopped?: RunStopped | null;
  /** The crew's settings of the flight checks (config.flightMinHeightM). */
  flights?: FlightOptions;
}): Promise<Completed> {
  const stopped = o.stopped ?? null;
  // Nothing due (the kept verdict knows when each done file was last looked at): not one row read.
  const due = (): boolean =>
    checksDueBefore(o.queue, o.card, Date.now() - o.recheckAfterMs, o.destinations, o.flights, stopped);
  if (!o.serverDown && due())
    await verifySource(o, o.card.sourceId, {
      olderThanMs: o.recheckAfterMs,
      ...(o.signal ? { signal: o.signal } : {}),
    });
  const offload = cardOffload(o.queue, o.card, o.destinations ?? [], o.flights, stopped);
  let manifest: Published;
  let uploadProblem: string | null = null;
  try {
    manifest = writeManifest(o.manifestsDir, offload, TOOL);
  } catch (err) {
    // The verdict stands without its manifest (a full disk): said, and written at the next rest.
    const e = toDmsError(err);
    const dir = path.join(o.manifestsDir, manifestFolder(offload));
    manifest = { dir, files: [], changed: false, toUpload: [], digest: '', hashList: null };
    uploadProblem = `The manifest of ${o.card.label} could not be written to ${dir}: ${plainMessage(e)} It is written at the next sync.`;
    o.log.warn({ source: o.card.sourceId, kind: e.kind, detail: e.message }, uploadProblem);
  }
  if (manifest.toUpload.length > 0 && !o.serverDown) {
    try {
      const folder = `manifests/${manifestFolder(offload)}`;
      // A few at a time, not one after the other: on a 300 ms link each round trip counts.
      // Each is sent from its file as it is read (a 10,000-file card's report is 16 MB).
      const left = [...manifest.toUpload];
      const one = async (): Promise<void> => {
        for (let f = left.shift(); f !== undefined; f = left.shift())
          await o.bucket.put(
            folder,
            f,
            { file: path.join(manifest.dir, f) },
            contentType(f),
            o.signal,
            livingFile(f),
          );
      };
      await Promise.all(Array.from({ length: Math.min(MANIFEST_PUTS, left.length) }, one));
      markUploaded(manifest.dir, manifest.digest);
    } catch (err) {
      const e = toDmsError(err);
      // The crew's words; the request and its error code stay in the log's fields.
      uploadProblem = `The manifest of ${o.card.label} is in ${manifest.dir} but could not be uploaded: ${plainMessage(e, 'request')}`;
      o.log.warn({ source: o.card.sourceId, kind: e.kind, detail: e.message }, uploadProblem);
    }
  }
  return { offload, manifest, uploadProblem };
}

function contentType(file: string): string {
  if (file.endsWith('.html')) return 'text/html; charset=utf-8';
  if (file.endsWith('.json')) return 'application/json';
  return 'application/xml';
}

/** Manifest files written to the bucket at once (a generation is 4: its hash list, the chain, two reports). */
const MANIFEST_PUTS = 4;

/**
 * The files each new generation rewrites (the report, the ASC MHL chain):
 * replaced in the bucket. A generation's hash list (`.mhl`) is written once
 * and never replaced.
 */
function livingFile(file: string): boolean {
  return !file.endsWith('.mhl');
}
