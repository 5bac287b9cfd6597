import fs from 'node:fs';
import path from 'node:path';
import { cardOffload, reportInput, type CardRef } from '../../core/offload/card.js';
import { manifestFolder, writeManifest, type Published } from '../../core/offload/publish.js';
import { reportJson } from '../../core/offload/report.js';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import type { Queue } from '../../core/queue/queue.js';
import { fallbackLabel } from '../../core/queue/sources.js';
import { folderSource, sourceOf } from '../../core/sources/source.js';
import { TOOL } from '../../core/version.js';
import { resolveStateDir } from '../context.js';
import { printJson, writeLines } from '../output.js';
import { offloadText } from '../offload-text.js';
import { openQueueForReading, requireWritable } from '../state-access.js';

export interface ReportFlags {
  state?: string;
  json?: boolean;
  acceptFlight?: string[];
  /** The crew's lowest useful height above take-off (m): photos below it are flagged. */
  minHeight?: number;
}

const nothingYet = () =>
  new DmsError('invalid-input', 'Nothing synced yet: there is nothing to report.', { retryable: false });

/** Where a source was synced from, for a person: its folder, or the card's label. */
function shownAs(queue: Queue, sourceId: string): string {
  const s = sourceOf(sourceId);
  return s.kind === 'folder' ? s.root : `card ${queue.sources.labelOf(sourceId)}`;
}

/** The cards asked for, each one the queue knows; a folder nothing was synced from is refused by name. */
function cardsAsked(queue: Queue, dirs: string[]): CardRef[] {
  const known = queue.recentSources();
  if (dirs.length === 0)
    return known.slice(0, 20).map((sourceId) => ({ sourceId, label: queue.sources.labelOf(sourceId) }));
  return dirs.map((d) => {
    const root = path.resolve(d);
    const { sourceId } = folderSource(root);
    if (!known.includes(sourceId)) {
      const where = fs.existsSync(root)
        ? `Nothing was synced from ${root}`
        : `${root} does not exist, and nothing was synced from it`;
      const list = known.slice(0, 5).map((s) => shownAs(queue, s));
      throw new DmsError(
        'invalid-input',
        `${where}. ${list.length ? `Synced before: ${list.join(', ')}${known.length > 5 ? ' and more' : ''}.` : ''} Run drone-media-sync report without a folder for the recent ones.`,
        { retryable: false },
      );
    }
    return { sourceId, label: path.basename(root) || fallbackLabel(sourceId) };
  });
}

/**
 * `report [<dir>...]`: each card's (or folder's) verdict — safe to format or
 * why not — its flights and where its report is, from the queue (works
 * beside a running agent, without the server, and on a state folder this
 * user can only read). `--accept-flight <folder>` records that the crew
 * accepts a flagged flight as it is.
 */
export function reportCommand(dirs: string[], flags: ReportFlags): number {
  const paths = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(paths.queue)) throw nothingYet();
  if (flags.acceptFlight?.length) requireWritable(paths.root, 'the accepted flight');
  const opened = openQueueForReading(paths.root, paths.queue);
  const { queue } = opened;
  try {
    if (!queue.bindLastTarget()) throw nothingYet();
    const out: Array<{ offload: ReturnType<typeof cardOffload>; manifest: Published | null }> = [];
    const checks = flags.minHeight === undefined ? {} : { minHeight: flags.minHeight };
    for (const card of cardsAsked(queue, dirs)) {
      let offload = cardOffload(queue, card, [], checks);
      for (const f of flags.acceptFlight ?? []) {
        const flight = offload.flights.find((x) => x.folder === f || path.posix.basename(x.folder) === f);
        if (!flight)
          throw new DmsError(
            'invalid-input',
            `No flight ${f} on ${card.label}: the flights are ${offload.flights.map((x) => x.folder).join(', ') || 'none'}.`,
            { retryable: false },
          );
        queue.flights.accept(card.sourceId, flight.folder);
      }
      if (flags.acceptFlight?.length) offload = cardOffload(queue, card, [], checks);
      // Written here too when the verdict changed (an accepted flight); uploaded at the next sync.
      const manifest = opened.readOnly ? null : writeManifest(paths.manifests, offload, TOOL);
      out.push({ offload, manifest });
    }
    if (flags.json) {
      const reports = out.map(({ offload, manifest }) =>
        reportJson(reportInput(offload, new Date(), TOOL), manifest?.hashList ?? null),
      );
      printJson(reports.length === 1 ? reports[0] : reports);
      return 0;
    }
    for (const { offload, manifest } of out) {
      const dir = manifest?.dir ?? path.join(paths.manifests, manifestFolder(offload));
      process.stdout.write(offloadText(offload, fs.existsSync(dir) ? dir : undefined));
    }
    if (opened.readOnly)
      writeLines([`(Read from ${paths.root}, which this user cannot write: the reports were not updated.)`]);
    return 0;
  } finally {
    opened.close();
  }
}
