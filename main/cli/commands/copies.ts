import fs from 'node:fs';
import { commandLinePath } from '../../core/config.js';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { Queue } from '../../core/queue/queue.js';
import { resolveStateDir } from '../context.js';
import { writeLines } from '../output.js';
import { requireWritable } from '../state-access.js';

/**
 * Forgets local destinations: each counts for no card any more (a card's
 * verdict no longer names it) and its copy records are forgotten; the files
 * on it are not touched. Named again later (`--copy-to`, the settings), it
 * is a destination again. Returns what was forgotten, for the caller to say.
 */
export function forgetDestinations(queue: Queue, dirs: readonly string[]): string[] {
  const unknown = dirs.filter((d) => !queue.copies.destinationAt(commandLinePath(d)));
  if (unknown.length > 0) {
    const known = queue.copies
      .destinations()
      .map((d) => d.path)
      .slice(0, 8);
    throw new DmsError(
      'invalid-input',
      `No copies were ever made to ${unknown.join(', ')}: nothing to forget.${known.length ? ` Destinations known: ${known.join(', ')}.` : ''}`,
      { retryable: false },
    );
  }
  return dirs.map((d) => {
    const destination = queue.copies.destinationAt(commandLinePath(d))!;
    const n = queue.copies.forgetDestination(destination.id);
    return `Forgot ${destination.label} (${destination.path}): it no longer counts for any card (${n} copy record${n === 1 ? '' : 's'}); its files were not touched.`;
  });
}

/** `copies forget DIR...`: see forgetDestinations. */
export function copiesForgetCommand(dirs: string[], flags: { state?: string }): number {
  const sp = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(sp.queue)) {
    process.stdout.write('Nothing synced yet: there is no destination to forget.\n');
    return 1;
  }
  requireWritable(sp.root, 'the destinations to forget');
  const queue = new Queue(sp.queue);
  try {
    writeLines(forgetDestinations(queue, dirs));
    return 0;
  } finally {
    queue.close();
  }
}
