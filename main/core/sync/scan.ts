import type { Config } from '../config.js';
import { discoverMedia, type DiscoverWarning } from '../media/discover.js';
import { rtkKindOf } from '../media/rtk-files.js';
import type { ObserveResult, ObservedFile, Queue } from '../queue/queue.js';
import type { Source } from '../sources/source.js';

export interface ScanResult extends ObserveResult {
  /** Files too fresh to read yet (still being copied). */
  deferred: number;
  /** Links out of the source: never read, named to the user. */
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
  opts: { quietMs?: number; now?: number } = {},
): Promise<ScanResult> {
  // Files modified within the quiet period may still be being copied: leave
  // them for the watcher, which reports them once their size is stable.
  const settledBefore = opts.quietMs ? (opts.now ?? Date.now()) - opts.quietMs : Infinity;
  const total: ScanResult = { pending: [], alreadyDone: 0, failed: 0, deferred: 0, skipped: [] };
  let batch: ObservedFile[] = [];
  const flush = () => {
    const r = queue.observe(batch);
    total.pending.push(...r.pending);
    total.alreadyDone += r.alreadyDone;
    total.failed += r.failed;
    batch = [];
  };
  try {
    for await (const f of discoverMedia([source.root], {
      include: config.include,
      exclude: config.exclude,
      alsoInclude: isRtk,
      onWarning: (w) => {
        if (w.kind === 'outside-root') total.skipped.push(w);
      },
      ...(signal ? { signal } : {}),
    })) {
      if (f.mtimeMs > settledBefore) {
        total.deferred++;
        continue;
      }
      const kind = isRtk(f.relPath) ? 'rtk' : 'media';
      batch.push({
        sourceId: source.sourceId,
        relPath: f.relPath,
        absPath: f.path,
        size: f.size,
        mtimeMs: Math.trunc(f.mtimeMs),
        kind,
      });
      if (batch.length >= 2000) flush();
    }
    flush();
  } catch (err) {
    // A card pulled mid-scan cannot vouch for the files it did not show ("safe to format").
    queue.sources.recordScan(source.sourceId, false);
    throw err;
  }
  queue.sources.recordScan(source.sourceId, total.deferred === 0);
  return total;
}

const isRtk = (name: string): boolean => rtkKindOf(name) !== undefined;

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
  for await (const f of discoverMedia([source.root], {
    include: config.include,
    exclude: config.exclude,
    alsoInclude: isRtk,
    ...(signal ? { signal } : {}),
  })) {
    files++;
    bytes += f.size;
  }
  return { files, bytes };
}
