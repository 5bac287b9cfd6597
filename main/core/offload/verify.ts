/**
 * A source's done files looked at again in the bucket, for "safe to format":
 * our own object (or a twin's with the same content); content the server
 * already had from elsewhere (fast-upload "known", no key of ours) keeps the
 * server's word. Reads the store, asks the bucket through its narrow port,
 * and records each look through the store.
 */
import { toDmsError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Queue } from '../queue/queue.js';
import { checkedObject, type DoneRow } from '../queue/rows.js';
import { buildObjectKey } from '../storage/keys.js';
import type { BucketPort } from '../storage/types.js';

/** At most this many HEADs at once. */
const CHECKS_AT_ONCE = 8;

/**
 * Checks the done files of a source never checked, or last checked more than
 * `olderThanMs` ago (an object deleted after its callback is caught). A check
 * that cannot be made now (network) leaves the file as it was; returns how
 * many were checked.
 */
export async function verifySource(
  o: { queue: Queue; bucket: BucketPort; log?: Logger },
  sourceId: string,
  opts: { olderThanMs: number; signal?: AbortSignal },
): Promise<number> {
  const before = Date.now() - opts.olderThanMs;
  // Only the rows due are read: a card re-inserted soon after its upload reads none (the whole
  // card read and parsed here was a third of a 10,000-file card's "nothing to do").
  const rows = o.queue.list({ sourceId, states: ['done'], checkDueBefore: before, limit: 1_000_000 }).filter(
    (r): r is DoneRow & { fingerprint: string } =>
      r.state === 'done' &&
      r.fingerprint !== undefined &&
      // The server's word is looked past whenever there is an object of ours to look at.
      (r.verified === null || r.verified.by === 'server' || r.verified.at <= before),
  );
  let checked = 0;
  let next = 0;
  let prefix: string | null = null;
  const worker = async (): Promise<void> => {
    while (next < rows.length && !opts.signal?.aborted) {
      const r = rows[next++] as DoneRow & { fingerprint: string };
      try {
        // Our own object, a twin's; else where an agent of ours would have put this content
        // (keys are made of the flight folder, the MD5 and the name): another laptop's upload.
        prefix ??= await o.bucket.prefix(opts.signal);
        const key =
          r.objectKey ??
          o.queue.objectKeyOfContent(r.fingerprint) ??
          (r.info
            ? buildObjectKey({
                prefix,
                fingerprint: r.fingerprint,
                relPath: r.relPath,
                ...(r.info.path ? { flightFolder: r.info.path } : {}),
              })
            : null);
        if (!key) continue;
        const v = checkedObject(await o.bucket.stat(key, opts.signal), r.size, r.fingerprint, Date.now());
        // Not where we would have put it: the server's word is all there is (never "missing").
        if (!v.found && r.objectKey === null && r.verified?.by === 'server') continue;
        o.queue.apply(r, { type: 'verified', verified: v });
        checked++;
      } catch (err) {
        o.log?.info({ file: r.relPath, kind: toDmsError(err).kind }, 'not checked in the bucket now');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CHECKS_AT_ONCE, rows.length) }, worker));
  return checked;
}
