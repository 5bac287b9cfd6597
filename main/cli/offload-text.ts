import path from 'node:path';
import type { CardOffload } from '../core/offload/card.js';
import type { FlightCompleteness } from '../core/offload/types.js';
import { visible } from '../shared/visible.js';
import { flightSummaryWords } from '../shared/flight-map.js';

/** One flight in a line or two: photos vs exposures, missing indexes, fixes, flags. */
export function flightLines(f: FlightCompleteness): string[] {
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
 * The verdict, its reasons and the flights, for a terminal. Card, folder and
 * file names come from the card: each line is made visible-safe, so a name
 * can neither forge a line nor send escapes.
 */
export function offloadText(o: CardOffload, manifestDir?: string): string {
  const lines = [o.message];
  if (o.verdict.advisory) lines.push(`  ${o.verdict.advisory}`);
  if (o.local) {
    // Two verdicts, each with its reasons: the local copies, then the workspace.
    lines.push(`  Local copies: ${unlabelled(o.local.message, o.card.label)}`);
    for (const r of o.local.reasons) lines.push(`    - ${r}`);
    lines.push(`  In the workspace: ${unlabelled(o.verdict.message, o.card.label)}`);
    for (const r of o.verdict.reasons) lines.push(`    - ${r}`);
  } else for (const r of o.verdict.reasons) lines.push(`  - ${r}`);
  for (const n of o.verdict.notes) lines.push(`  Note: ${n}`);
  for (const f of o.flights) lines.push(...flightLines(f));
  if (manifestDir) lines.push(`  Report: ${reportFile(manifestDir)}`);
  return `${lines.map((l) => visible(l)).join('\n')}\n`;
}

/** A card's local verdict, when its copies came to rest (before the upload is done). */
export function localText(o: CardOffload): string {
  if (!o.local) return '';
  const lines = [o.local.message, ...o.local.reasons.map((r) => `  - ${r}`)];
  return `${lines.map((l) => visible(l)).join('\n')}\n`;
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
    flights: o.flights.map(({ exposures: _e, ...f }) => f),
    ...(manifestDir ? { manifest: manifestDir, report: reportFile(manifestDir) } : {}),
  };
}
