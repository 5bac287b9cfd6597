import fs from 'node:fs';
import path from 'node:path';
import { cardOffload, reportInput, type CardOffload, type CardRef } from '../../core/offload/card.js';
import { manifestFolder, writeManifest, type Published } from '../../core/offload/publish.js';
import { reportJson } from '../../core/offload/report.js';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import type { Queue, TargetSummary } from '../../core/queue/queue.js';
import { fallbackLabel } from '../../core/queue/sources.js';
import { folderSource, sourceOf } from '../../core/sources/source.js';
import { sourceAt } from '../../core/sources/cards.js';
import { TOOL } from '../../core/version.js';
import { resolveStateDir } from '../context.js';
import { printJson, writeLines } from '../output.js';
import { offloadText } from '../offload-text.js';
import { openQueueForReading, requireWritable } from '../state-access.js';
import { neverAnswered, targetName, targetsToShow } from '../targets.js';

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
  if (s.kind === 'folder') return s.root;
  // A card (known by the card since issue 29): the folder it was last read from, as the crew typed it.
  const row = queue.list({ sourceId, limit: 1 })[0];
  const from = row?.absPath.endsWith(row.relPath) ? row.absPath.slice(0, -row.relPath.length - 1) : '';
  return from || `card ${queue.sources.labelOf(sourceId)}`;
}

/** A card of one target: its verdict is read with the queue bound to that target. */
interface Asked {
  target: TargetSummary;
  card: CardRef;
}

/**
 * The cards asked for, each with every target holding it (the main one
 * first: issue 30, a run against another server never stands in for this
 * one); a folder nothing was synced from is refused by name.
 */
function cardsAsked(queue: Queue, targets: TargetSummary[], dirs: string[]): Asked[] {
  const sourcesOf = new Map<number, string[]>();
  for (const t of targets) {
    queue.useTarget(t);
    sourcesOf.set(t.id, queue.recentSources());
  }
  const known = [...new Set([...sourcesOf.values()].flat())];
  if (dirs.length === 0)
    return targets.flatMap((target) =>
      (sourcesOf.get(target.id) ?? [])
        .slice(0, 20)
        .map((sourceId) => ({ target, card: { sourceId, label: queue.sources.labelOf(sourceId) } })),
    );
  return dirs.flatMap((d) => {
    const root = path.resolve(d);
    // The card in that folder now, by the card; else what was synced from that folder (before, by its path).
    const asCard = fs.existsSync(root) ? sourceAt(root).sourceId : null;
    const sourceId = asCard && known.includes(asCard) ? asCard : folderSource(root).sourceId;
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
    const card = { sourceId, label: path.basename(root) || fallbackLabel(sourceId) };
    return targets.filter((t) => sourcesHas(sourcesOf, t, sourceId)).map((target) => ({ target, card }));
  });
}

const sourcesHas = (m: Map<number, string[]>, t: TargetSummary, sourceId: string): boolean =>
  (m.get(t.id) ?? []).includes(sourceId);

/**
 * `report [<dir>...]`: each card's (or folder's) verdict — safe to format or
 * why not — its flights and where its report is, from the queue (works
 * beside a running agent, without the server, and on a state folder this
 * user can only read), for each server (and workspace) the card was synced
 * to, each on its own with its own report.html. `--accept-flight <folder>`
 * records that the crew accepts a flagged flight as it is (for the main one).
 */
export function reportCommand(dirs: string[], flags: ReportFlags): number {
  const paths = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(paths.queue)) throw nothingYet();
  if (flags.acceptFlight?.length) requireWritable(paths.root, 'the accepted flight');
  const opened = openQueueForReading(paths.root, paths.queue);
  const { queue } = opened;
  try {
    const targets = targetsToShow(queue);
    if (targets.length === 0) throw nothingYet();
    const out: Array<{ target: TargetSummary; offload: CardOffload; manifest: Published | null }> = [];
    const checks = flags.minHeight === undefined ? {} : { minHeight: flags.minHeight };
    for (const { target, card } of cardsAsked(queue, targets, dirs)) {
      queue.useTarget(target);
      let offload = cardOffload(queue, card, [], checks);
      const accepting = target === targets[0] ? (flags.acceptFlight ?? []) : [];
      for (const f of accepting) {
        const flight = offload.flights.find((x) => x.folder === f || path.posix.basename(x.folder) === f);
        if (!flight)
          throw new DmsError(
            'invalid-input',
            `No flight ${f} on ${card.label}: the flights are ${offload.flights.map((x) => x.folder).join(', ') || 'none'}.`,
            { retryable: false },
          );
        queue.flights.accept(card.sourceId, flight.folder);
      }
      if (accepting.length) offload = cardOffload(queue, card, [], checks);
      // Written here too when the verdict changed (an accepted flight); uploaded at the next sync.
      const manifest = opened.readOnly ? null : writeManifest(paths.manifests, offload, TOOL);
      out.push({ target, offload, manifest });
    }
    if (flags.json) {
      const reports = out.map(({ offload, manifest }) =>
        reportJson(reportInput(offload, new Date(), TOOL), manifest?.hashList ?? null),
      );
      printJson(reports.length === 1 ? reports[0] : reports);
      return 0;
    }
    let shown: TargetSummary | null = null;
    for (const { target, offload, manifest } of out) {
      // Which server each verdict is about, when the queue knows more than one.
      if (targets.length > 1 && target !== shown)
        writeLines([
          target.state === 'answered'
            ? `For ${targetName(target)}:`
            : `For ${targetName(target)}: ${neverAnswered(target)}`,
        ]);
      shown = target;
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
