/**
 * Forgetting a target (issue 30), shared by `forget` and the window: what it
 * drops, said in a sentence before anything is done, then the queue's one
 * door (`Queue.applyTarget(t, 'forget')`, queue/targets.ts) and the reports
 * written for it in the state folder. The cards, the server and its bucket,
 * and the local copies are not touched; other targets are not changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatBytes } from '../../shared/sizes.js';
import type { Queue, TargetRef, TargetSummary } from '../queue/queue.js';

/** "http://host:8080 (workspace ws-1)", or the built-in local service with its workspace. */
export function targetName(t: TargetRef): string {
  return `${t.label}${t.workspaceId ? ` (workspace ${t.workspaceId})` : ''}`;
}

/** What is left untouched, said beside what is dropped. */
export const FORGET_KEEPS =
  'The cards, the server and its bucket, and the local copies are not touched; other servers are not changed.';

export interface ForgetPlan {
  target: TargetSummary;
  /** What forgetting drops, in a sentence ("the record of 15 files (…), 2 history entries, 1 report in …"). */
  what: string;
  /** The report folders written for this target. */
  reports: string[];
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** What forgetting `t` would drop (nothing is changed). */
export function forgetPlan(queue: Queue, t: TargetSummary, manifestsDir: string): ForgetPlan {
  const reports = reportsOf(manifestsDir, t.key);
  const h = queue.holdings(t.id);
  const done = h.counts.done;
  const all = Object.values(h.counts).reduce(
    (a, c) => ({ files: a.files + c.files, bytes: a.bytes + c.bytes }),
    { files: 0, bytes: 0 },
  );
  const notDone = all.files - done.files;
  const cards = h.sources.map((s) => queue.sources.labelOf(s));
  const parts = [
    `the record of ${plural(all.files, 'file')} (${formatBytes(all.bytes)}; ${done.files} done, ${notDone} not done) from ${plural(cards.length, 'card or folder', 'cards or folders')}${cards.length ? ` (${cards.slice(0, 5).join(', ')}${cards.length > 5 ? ' and more' : ''})` : ''}`,
  ];
  if (h.historyEntries) parts.push(`${plural(h.historyEntries, 'history entry', 'history entries')}`);
  if (h.acceptedFlights) parts.push(`${plural(h.acceptedFlights, 'accepted flight')}`);
  if (h.waylineMatches) parts.push(`${plural(h.waylineMatches, 'wayline match', 'wayline matches')}`);
  parts.push(`${plural(reports.length, 'report')} in ${path.basename(path.dirname(queue.path))}/manifests`);
  return { target: t, what: parts.join(', '), reports };
}

/** Forgets the plan's target: its rows through the queue's one door, then its reports. */
export function forgetTarget(queue: Queue, plan: ForgetPlan): void {
  queue.applyTarget(plan.target, 'forget');
  for (const dir of plan.reports) fs.rmSync(dir, { recursive: true, force: true });
}

/** The manifest folders written for this target (their report.json names it). */
function reportsOf(manifests: string, key: string): string[] {
  if (!fs.existsSync(manifests)) return [];
  return fs
    .readdirSync(manifests, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => path.join(manifests, e.name))
    .filter((dir) => {
      try {
        const r = JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8')) as {
          target?: { id?: string };
        };
        return r.target?.id === key;
      } catch {
        return false;
      }
    });
}
