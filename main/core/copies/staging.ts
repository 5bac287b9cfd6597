/**
 * The one deletion the agent ever makes: a card's copy on a destination the
 * crew marked as staging (`role: 'staging'`, `keepDays`), once every file of
 * that copy is verified in the workspace (acknowledged by the current target
 * and its object checked in the bucket: not on the server's word) and the
 * copy is older than `keepDays`. Never the card, never an archive
 * destination, never a folder outside the destination.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isInside } from '../media/discover.js';
import type { Destination } from '../queue/copies.js';
import type { Queue } from '../queue/queue.js';

export interface Cleaned {
  destination: Destination;
  sourceId: string;
  /** The card's folder that was deleted. */
  folder: string;
  files: number;
}

const DAY = 24 * 60 * 60_000;

/** Deletes what the rules allow (see above); returns what was deleted. */
export function cleanStaging(queue: Queue, now = Date.now()): Cleaned[] {
  const out: Cleaned[] = [];
  for (const destination of queue.copies.destinations()) {
    const keepDays = destination.keepDays;
    if (destination.role !== 'staging' || keepDays === null) continue;
    const bySource = new Map<string, ReturnType<Queue['copies']['onDestination']>>();
    for (const c of queue.copies.onDestination(destination.id)) {
      if (c.state !== 'verified') continue;
      const list = bySource.get(c.sourceId) ?? [];
      list.push(c);
      bySource.set(c.sourceId, list);
    }
    for (const [sourceId, copies] of bySource) {
      if (copies.some((c) => now - c.at < keepDays * DAY)) continue;
      // Every file of the copy in the workspace, checked in its bucket.
      const done = new Map(
        queue
          .list({ sourceId, states: ['done'], limit: 1_000_000 })
          .map((r) => [`${r.relPath}|${r.size}|${r.mtimeMs}`, r]),
      );
      const inWorkspace = copies.every((c) => {
        const r = done.get(`${c.relPath}|${c.size}|${c.mtimeMs}`);
        if (r?.state !== 'done') return false;
        const v = r.verified;
        return (
          v?.by === 'bucket' && v.found && v.size === c.size && v.checksum !== 'mismatch' && !r.serverKey
        );
      });
      if (!inWorkspace) continue;
      const folder = cardFolderOf(copies[0]?.path ?? '', copies[0]?.relPath ?? '');
      // Only a folder inside the staging destination, and never the destination itself.
      const root = path.resolve(destination.path);
      if (folder === '' || path.resolve(folder) === root || !isInside(path.resolve(folder), root)) continue;
      fs.rmSync(folder, { recursive: true, force: true });
      queue.copies.forgetCard(destination.id, sourceId);
      out.push({ destination, sourceId, folder, files: copies.length });
    }
  }
  return out;
}

/** The card's folder on a destination: a copy's path minus its path on the card. */
function cardFolderOf(copyPath: string, relPath: string): string {
  return copyPath.endsWith(relPath) ? copyPath.slice(0, copyPath.length - relPath.length - 1) : '';
}
