/**
 * A source's done files looked at again in the bucket, for "safe to format":
 * our own object (or a twin's with the same content); content the server
 * already had from elsewhere (fast-upload "known", no key of ours) keeps the
 * server's word. Reads the store, asks the bucket through its narrow port,
 * and records each look through the store.
 */
import { toDmsError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Queue, QueueRow } from '../queue/queue.js';
import { checkedObject, type DoneRow } from '../queue/rows.js';
import { buildObjectKey } from '../storage/keys.js';
import type { BucketPort, ObjectStat } from '../storage/types.js';

/** At most this many HEADs at once. */
const CHECKS_AT_ONCE = 8;
/** A folder with at least this many files due is listed rather than looked at object by object. */
const LIST_AT_LEAST = 16;
/** Rows read and checked at a time. */
export const PAGE_ROWS = 1000;

type Row = DoneRow & { fingerprint: string };

/**
 * Checks the done files of a source never checked, or last checked more than
 * `olderThanMs` ago (an object deleted after its callback is caught). A check
 * that cannot be made now (network) leaves the file as it was; returns how
 * many were checked.
 */
export async function verifySource(
  o: { queue: Queue; bucket: BucketPort; log?: Logger },
  sourceId: string,
  opts: {
    olderThanMs: number;
    signal?: AbortSignal;
    /** Rows read at a time (PAGE_ROWS). */ pageRows?: number;
  },
): Promise<number> {
  const page = opts.pageRows ?? PAGE_ROWS;
  const before = Date.now() - opts.olderThanMs;
  // Only the rows due are read: a card re-inserted soon after its upload reads none (the whole
  // card read and parsed here was a third of a 10,000-file card's "nothing to do").
  const ids = o.queue.idsOf({ sourceId, states: ['done'], checkDueBefore: before });
  const due = (r: QueueRow): r is Row =>
    r.state === 'done' &&
    r.fingerprint !== undefined &&
    // The server's word is looked past whenever there is an object of ours to look at.
    (r.verified === null || r.verified.by === 'server' || r.verified.at <= before);
  let checked = 0;
  const record = (r: Row, stat: ObjectStat): void => {
    const v = checkedObject(stat, r.size, r.fingerprint, Date.now());
    // Not where we would have put it: the server's word is all there is (never "missing").
    if (!v.found && r.objectKey === null && r.verified?.by === 'server') return;
    o.queue.apply(r, { type: 'verified', verified: v });
    checked++;
  };
  let prefix: string | undefined;
  // A page of rows at a time: a 10,000-file card's rows parsed at once were about 50 MiB of the
  // agent's peak at the card's end (its files known to the server, a fresh state: 279-292 MiB,
  // 235-241 without this check).
  for (let i = 0; i < ids.length && !opts.signal?.aborted; i += page) {
    const rows = o.queue.rowsOf(ids.slice(i, i + page)).filter(due);
    if (rows.length === 0) continue;
    if (prefix === undefined) {
      try {
        prefix = await o.bucket.prefix(opts.signal);
      } catch (err) {
        o.log?.info({ kind: toDmsError(err).kind }, 'not checked in the bucket now');
        return checked;
      }
    }
    await checkPage(rows, prefix);
  }
  return checked;

  async function checkPage(rows: readonly Row[], prefix: string): Promise<void> {
    // Our own object, a twin's; else where an agent of ours would have put this content
    // (keys are made of the flight folder, the MD5 and the name): another laptop's upload.
    const keyOf = (r: Row): string | null =>
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
    // A flight folder with many files due is listed (a page of 1,000 objects a request) instead of
    // one HEAD per object: a 10,000-file card checked again the next day took 10,000 round trips.
    const byFolder = new Map<string, Array<{ r: Row; key: string }>>();
    for (const r of rows) {
      const key = keyOf(r);
      if (!key) continue;
      // Keys are <prefix>/<flight folder>/<MD5>/<name>: the flight folder is what many share.
      const parent = key.lastIndexOf('/');
      const folder = key.slice(0, key.lastIndexOf('/', parent - 1) + 1);
      let group = byFolder.get(folder);
      if (!group) byFolder.set(folder, (group = []));
      group.push({ r, key });
    }
    const oneByOne: Array<{ r: Row; key: string }> = [];
    for (const [folder, group] of byFolder) {
      if (group.length < LIST_AT_LEAST || opts.signal?.aborted) {
        oneByOne.push(...group);
        continue;
      }
      let listed: Map<string, NonNullable<ObjectStat>> | null | undefined;
      try {
        // Up to 4 pages past the files due: a folder of other objects too is looked at one by one.
        listed = await o.bucket.list?.(folder, group.length + 4_000, opts.signal);
      } catch (err) {
        // A store or credentials that do not allow listing: each object is looked at instead.
        o.log?.info(
          { folder, kind: toDmsError(err).kind },
          'folder not listed; its objects are looked at one by one',
        );
      }
      if (!listed) {
        oneByOne.push(...group);
        continue;
      }
      for (const { r, key } of group) record(r, listed.get(key) ?? null);
    }
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < oneByOne.length && !opts.signal?.aborted) {
        const { r, key } = oneByOne[next++]!;
        try {
          record(r, await o.bucket.stat(key, opts.signal));
        } catch (err) {
          o.log?.info({ file: r.relPath, kind: toDmsError(err).kind }, 'not checked in the bucket now');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CHECKS_AT_ONCE, oneByOne.length) }, worker));
  }
}
