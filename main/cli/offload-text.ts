import path from 'node:path';
import { shownFlights, type CardOffload, type ShownFlight } from '../core/offload/card.js';
import { visible } from '../shared/visible.js';
import { flightSummaryWords } from '../shared/flight-map.js';
import { RawJson } from './output.js';

/** One flight in a line or two: photos vs exposures, missing indexes, fixes, flags. */
export function flightLines(f: ShownFlight): string[] {
  const name = f.name ?? path.posix.basename(f.folder);
  const parts = [`${f.photos} photo${f.photos === 1 ? '' : 's'}`];
  if (f.summary) parts.unshift(...flightSummaryWords(f.summary));
  if (f.videos > 0) parts.push(`${f.videos} video${f.videos === 1 ? '' : 's'}`);
  if (f.exposuresInMrk !== null)
    parts.push(`${f.exposuresFound} of ${f.exposuresInMrk} exposures in the MRK`);
  if (f.rtkCounts)
    parts.push(`RTK fixed ${f.rtkCounts.fixed}, float ${f.rtkCounts.float}, single ${f.rtkCounts.single}`);
  if (f.wayline) parts.push(`wayline "${f.wayline.name}"`);
  const mark = f.incomplete ? 'INCOMPLETE' : f.flags.length > 0 ? 'check' : 'ok';
  return [
    `  ${mark.padEnd(10)} ${name}: ${parts.join(', ')}`,
    ...f.flags.map((x) => `             - ${x.message}`),
  ];
}

/** A verdict's sentence under a headline that already names the card: without the card's name again. */
export function unlabelled(message: string, label: string): string {
  return message.startsWith(`${label}: `) ? message.slice(label.length + 2) : message;
}

/** The printable report in a card's manifest folder. */
export const reportFile = (manifestDir: string): string => path.join(manifestDir, 'report.html');

/**
 * The verdict, its reasons and the flights, for a terminal, one visible-safe
 * line each. Card, folder and file names come from the card: each line is
 * made visible-safe, so a name can neither forge a line nor send escapes.
 * `localSaid`: the copies' verdict was just said on its own (`localLines`),
 * so it is not said again here.
 */
export function offloadLines(o: CardOffload, manifestDir?: string, localSaid = false): string[] {
  const lines = [o.message];
  if (o.verdict.advisory) lines.push(`  ${o.verdict.advisory}`);
  if (o.local && !localSaid) {
    // Two verdicts, each with its reasons: the local copies, then the workspace.
    lines.push(`  Local copies: ${unlabelled(o.local.message, o.card.label)}`);
    for (const r of o.local.reasons) lines.push(`    - ${r}`);
    lines.push(`  In the workspace: ${unlabelled(o.verdict.message, o.card.label)}`);
    for (const r of o.verdict.reasons) lines.push(`    - ${r}`);
  } else for (const r of o.verdict.reasons) lines.push(`  - ${r}`);
  for (const n of o.verdict.notes) lines.push(`  Note: ${n}`);
  for (const f of shownFlights(o)) lines.push(...flightLines(f));
  if (manifestDir) lines.push(`  Report: ${reportFile(manifestDir)}`);
  return lines.map((l) => visible(l));
}

export function offloadText(o: CardOffload, manifestDir?: string): string {
  return `${offloadLines(o, manifestDir).join('\n')}\n`;
}

/** A card's local verdict, when its copies came to rest (before the upload is done). */
export function localLines(o: CardOffload): string[] {
  if (!o.local) return [];
  return [o.local.message, ...o.local.reasons.map((r) => `  - ${r}`)].map((l) => visible(l));
}

/**
 * What a run has said about each card's copies, so that each verdict is said
 * once: the copies' verdict when they come to rest, and the card's verdict
 * later without the copies' part again when it has not changed since.
 */
export class VerdictsSaid {
  private readonly local = new Map<string, string>();

  /** The copies' verdict lines, or none when this very verdict was said already. */
  localLines(o: CardOffload): string[] {
    const lines = localLines(o);
    const key = lines.join('\n');
    if (lines.length === 0 || this.local.get(o.card.sourceId) === key) return [];
    this.local.set(o.card.sourceId, key);
    return lines;
  }

  /** Whether the copies' verdict in `o` is the one said last for its card. */
  localSaid(o: CardOffload): boolean {
    const lines = localLines(o);
    return lines.length > 0 && this.local.get(o.card.sourceId) === lines.join('\n');
  }

  /** The card's verdict lines (the copies' part only when it is news). */
  offloadLines(o: CardOffload, manifestDir?: string): string[] {
    const said = this.localSaid(o);
    if (o.local) this.local.set(o.card.sourceId, localLines(o).join('\n'));
    return offloadLines(o, manifestDir, said);
  }
}

export function localJson(o: CardOffload): Record<string, unknown> {
  return {
    type: 'local-verdict',
    source: o.card.sourceId,
    label: o.card.label,
    at: new Date().toISOString(),
    safe: o.local?.safe ?? false,
    message: o.local?.message ?? '',
    reasons: o.local?.reasons ?? [],
    counts: o.local?.counts ?? null,
    readBack: o.local?.readBack ?? 'none',
  };
}

/** The same as one JSON object (the `verdict` lines of `sync --json`). */
export function offloadJson(o: CardOffload, manifestDir?: string): Record<string, unknown> {
  return {
    type: 'verdict',
    source: o.card.sourceId,
    label: o.card.label,
    // Safe to format: locally safe or in the workspace; `reasons` are the workspace's, `local` the copies'.
    safe: o.safe,
    message: o.message,
    reasons: o.verdict.reasons,
    workspace: { safe: o.verdict.safe, message: o.verdict.message },
    local: o.local && {
      safe: o.local.safe,
      message: o.local.message,
      reasons: o.local.reasons,
      counts: o.local.counts,
      readBack: o.local.readBack,
    },
    notes: o.verdict.notes,
    advisory: o.verdict.advisory ?? null,
    counts: o.verdict.counts,
    flights: o.shownFlightsJson !== undefined ? new RawJson(o.shownFlightsJson) : shownFlights(o),
    ...(manifestDir ? { manifest: manifestDir, report: reportFile(manifestDir) } : {}),
  };
}

/** A scan's skip as a line: "Skipped: …", but one folder of a card synced is a warning of its own, not a skip. */
export function skippedLine(w: { kind: string; message: string }): string {
  return w.kind === 'rest-of-card' ? w.message : `Skipped: ${w.message}`;
}
