import type { Config } from '../config.js';
import { discoverMedia } from '../media/discover.js';
import type { ObserveResult, ObservedFile, Queue } from '../queue/queue.js';

/** A place media comes from: a card (by its identity) or a watched folder. */
export interface Source {
  /** Stable identity: the card's id, or `folder:<absolute path>`. */
  sourceId: string;
  /** Where it is mounted / lives now. */
  root: string;
  /** What a person calls it ("Card M30T-01", a folder name). */
  label?: string;
}

export function folderSource(root: string): Source {
  return { sourceId: `folder:${root}`, root, label: root };
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
): Promise<ObserveResult & { deferred: number }> {
  // Files modified within the quiet period may still be being copied: leave
  // them for the watcher, which reports them once their size is stable.
  const settledBefore = opts.quietMs ? (opts.now ?? Date.now()) - opts.quietMs : Infinity;
  const total: ObserveResult & { deferred: number } = { pending: [], alreadyDone: 0, failed: 0, deferred: 0 };
  let batch: ObservedFile[] = [];
  const flush = () => {
    const r = queue.observe(batch);
    total.pending.push(...r.pending);
    total.alreadyDone += r.alreadyDone;
    total.failed += r.failed;
    batch = [];
  };
  for await (const f of discoverMedia([source.root], {
    include: config.include,
    exclude: config.exclude,
    ...(signal ? { signal } : {}),
  })) {
    if (f.mtimeMs > settledBefore) {
      total.deferred++;
      continue;
    }
    batch.push({ sourceId: source.sourceId, relPath: f.relPath, absPath: f.path, size: f.size, mtimeMs: Math.trunc(f.mtimeMs) });
    if (batch.length >= 2000) flush();
  }
  flush();
  return total;
}
