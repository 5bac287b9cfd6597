import fs from 'node:fs';
import { getCompileCacheDir } from 'node:module';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import {
  discoverBatches,
  VIDEO_EXTENSIONS,
  normaliseExtension,
  type DiscoverWarning,
  type OwnFolder,
} from '../media/discover.js';
import { rtkKindOf } from '../media/rtk-files.js';
import type { ObserveResult, ObservedFile, Queue } from '../queue/queue.js';
import type { Source } from '../sources/source.js';
import { cardAbove } from '../sources/cards.js';

export interface ScanResult extends ObserveResult {
  /** Files too fresh to read yet (still being copied). */
  deferred: number;
  /** What was found and not kept, with the reason (links out, unreadable, excluded...): named to the user. */
  skipped: DiscoverWarning[];
}

/**
 * Walks a source and records every media file in the queue in batches.
 * Only path, size and mtime are read here: files already done are
 * recognised without opening them.
 */
export async function scanSource(
  queue: Queue,
  source: Source,
  config: Config,
  signal?: AbortSignal,
  opts: { quietMs?: number; now?: number; own?: readonly OwnFolder[] } = {},
): Promise<ScanResult> {
  // Files modified within the quiet period may still be being copied: leave
  // them for the watcher, which reports them once their size is stable.
  const settledBefore = opts.quietMs ? (opts.now ?? Date.now()) - opts.quietMs : Infinity;
  const total: ScanResult = { pending: [], alreadyDone: 0, failed: 0, deferred: 0, skipped: [] };
  let batch: ObservedFile[] = [];
  const fresh: ObservedFile[] = [];
  const startedAt = opts.now ?? Date.now();
  // One folder of a card named instead of the card: its files go, the card's others were not read.
  const card = source.kind === 'folder' ? cardAbove(source.root) : undefined;
  if (card)
    total.skipped.push({
      path: card,
      relPath: path.relative(source.root, card).split(path.sep).join('/'),
      kind: 'rest-of-card',
      message: `${source.label} is one folder of the card ${path.basename(card) || card} (${card}): the card's other files were not read. Sync the card itself (${card}) before formatting it.`,
      blocking: true,
    });
  const flush = () => {
    // Videos last: their metadata is read from the SRT and a photo beside them, which are then on hand.
    // Split once, each path looked at once (a sort asked isVideo twice per comparison: 2 x 10,000 x log n).
    const videos: ObservedFile[] = [];
    const others: ObservedFile[] = [];
    for (const f of batch) (isVideo(f.relPath) ? videos : others).push(f);
    others.push(...videos);
    const r = queue.observe(others);
    total.pending.push(...r.pending);
    total.alreadyDone += r.alreadyDone;
    total.failed += r.failed;
    batch = [];
  };
  try {
    for await (const files of discoverBatches([source.root], {
      include: config.include,
      exclude: config.exclude,
      isRtk,
      onWarning: (w) => total.skipped.push(w),
      ...(opts.own ? { own: opts.own } : {}),
      ...(signal ? { signal } : {}),
    }))
      for (const f of files) {
        if (f.mtimeMs > settledBefore) {
          total.deferred++;
          // Named: while it is being written, the card is safe nowhere.
          total.skipped.push({
            path: f.path,
            relPath: f.relPath,
            kind: 'growing',
            message: `${f.relPath} is still being written: it is read once it has not changed for a moment.`,
            blocking: true,
          });
          continue;
        }
        const found: ObservedFile = {
          sourceId: source.sourceId,
          relPath: f.relPath,
          absPath: f.path,
          size: f.size,
          mtimeMs: Math.trunc(f.mtimeMs),
          kind: f.kind,
        };
        // A one-shot run (no quiet period) looks again at files written a moment ago (below).
        if (!opts.quietMs && startedAt - f.mtimeMs < FRESH_MS) fresh.push(found);
        else batch.push(found);
        if (batch.length >= 2000) flush();
      }
    // Files written a moment ago, looked at once more: one still growing is
    // named and left for the next run (issue 30: read while it grew, the run
    // never ended); one just copied is kept.
    if (fresh.length > 0) {
      await delay(RECHECK_MS, undefined, signal ? { signal } : undefined);
      for (const f of fresh) {
        if (!changedSince(f)) batch.push(f);
        else {
          total.deferred++;
          total.skipped.push({
            path: f.absPath,
            relPath: f.relPath,
            kind: 'growing',
            message: `${f.relPath} is still being written: it is left for the next run; sync again once the card is done.`,
            blocking: true,
          });
        }
      }
    }
    flush();
  } catch (err) {
    // A card pulled mid-scan cannot vouch for the files it did not show ("safe to format").
    queue.sources.recordScan(source.sourceId, false);
    throw err;
  }
  queue.sources.recordScan(source.sourceId, total.deferred === 0);
  queue.sources.recordSkips(
    source.sourceId,
    total.skipped.map((w) => ({
      relPath: w.relPath,
      kind: w.kind,
      message: w.message,
      blocking: w.blocking,
    })),
  );
  return total;
}

/** Files modified this recently are looked at again before a one-shot run reads them. */
const FRESH_MS = 2_000;
const RECHECK_MS = 1_000;

/** Whether a file's size or modification time changed since it was listed (or it is gone). */
function changedSince(f: ObservedFile): boolean {
  try {
    const st = fs.statSync(f.absPath);
    return st.size !== f.size || Math.trunc(st.mtimeMs) !== f.mtimeMs;
  } catch {
    return false;
  }
}

/**
 * The folders this agent writes itself, which a source may hold (`sync ~` holds the state
 * folder; a folder may hold its own copies' destination): never read as the source's files.
 * Every destination ever used counts: its copies are this agent's, whichever run made them;
 * so does the cache of its compiled code, under the same home, and what the shell names
 * (`also`: the desktop app's browser data and logs).
 */
export function ownFolders(queue: Queue, also: readonly OwnFolder[] = []): OwnFolder[] {
  const own: OwnFolder[] = [...also];
  const state = queue.folder;
  if (state) own.push({ path: state, what: 'its queue and settings' });
  for (const d of queue.copies.destinations())
    own.push({ path: d.path, what: `the local copies of cards, ${d.label}` });
  // Node's cache of this program's compiled code (the CLI turns it on: ~/.cache/drone-media-sync).
  const compiled = getCompileCacheDir();
  if (compiled) own.push({ path: path.dirname(compiled), what: 'its compiled code' });
  return own;
}

const isRtk = (name: string): boolean => rtkKindOf(name) !== undefined;
const VIDEOS = new Set(VIDEO_EXTENSIONS);
const isVideo = (relPath: string): boolean => VIDEOS.has(normaliseExtension(path.extname(relPath)));

/**
 * What a source holds, without recording anything (no target yet: the app
 * before sign-in shows "212 files wait").
 */
export async function countSource(
  source: Source,
  config: Config,
  signal?: AbortSignal,
): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for await (const batch of discoverBatches([source.root], {
    include: config.include,
    exclude: config.exclude,
    isRtk,
    ...(signal ? { signal } : {}),
  })) {
    files += batch.length;
    for (const f of batch) bytes += f.size;
  }
  return { files, bytes };
}
