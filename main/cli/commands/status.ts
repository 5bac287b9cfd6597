import fs from 'node:fs';
import path from 'node:path';
import { QueueLockedError, storedPlain } from '../../core/errors.js';
import { cardOffload } from '../../core/offload/card.js';
import type { RunStopped } from '../../core/offload/types.js';
import { acquireAgentLock } from '../../core/queue/lock.js';
import { unlabelled } from '../offload-text.js';
import { statePaths } from '../../core/paths.js';
import { WORKING_STATES } from '../../core/queue/states.js';
import { Queue, type FileState, type StateCounts, type TargetSummary } from '../../core/queue/queue.js';
import { neverAnswered, targetName, targetsToShow } from '../targets.js';
import { resolveStateDir } from '../context.js';
import { formatBytes, printJson, writeLines } from '../output.js';
import { openQueueForReading, requireWritable } from '../state-access.js';
import { queueLaneLines, queueLanes } from '../lanes.js';

const LABELS: Record<FileState, string> = {
  discovered: 'waiting to be read',
  hashed: 'read, not checked yet',
  'fast-upload-checked': 'to upload',
  uploading: 'uploading',
  uploaded: 'uploaded, not confirmed yet',
  done: 'done',
  failed: 'failed (needs you)',
  'waiting-for-source': 'waiting for the card',
};

function summary(c: StateCounts): string {
  const done = c.done.files;
  const rest = Object.values(c).reduce((n, v) => n + v.files, 0) - done;
  return `${done} done${rest > 0 ? `, ${rest} not done` : ''}`;
}

/**
 * `status`: what the queue holds for each server (and workspace) it worked
 * for, each on its own, straight from the database (works while an agent
 * runs): the one whose server answered last first, with its counts,
 * problems and cards; then the others, each with its own cards' verdicts; a
 * server that never answered is said so, with how to forget it.
 */
export function statusCommand(flags: { state?: string; json?: boolean; verbose?: boolean }): number {
  const paths = statePaths(resolveStateDir(flags));
  const nothing = (): number => {
    if (flags.json) printJson({ counts: {}, problems: [], targets: [] });
    else process.stdout.write('Nothing synced yet.\n');
    return 0;
  };
  if (!fs.existsSync(paths.queue)) return nothing();
  const opened = openQueueForReading(paths.root, paths.queue);
  const { queue } = opened;
  // No agent at work on this queue: what is not done waits for the next run, not "on the way".
  const stopped: RunStopped | null = !opened.readOnly && !agentRunning(paths.root) ? NEXT_RUN : null;
  try {
    const [main, ...others] = targetsToShow(queue);
    if (!main) return nothing();
    if (flags.json) {
      const facts = (t: TargetSummary) => {
        queue.useTarget(t);
        return {
          target: { label: t.label, workspace: t.workspaceId, answered: t.state === 'answered' },
          counts: t.counts,
          problems: queue.list({ states: ['failed', 'waiting-for-source'], limit: 200 }).map((r) => ({
            path: r.absPath,
            state: r.state,
            kind: r.errorKind,
            reason: r.errorMessage,
          })),
          cards: recentCards(queue, stopped).map((o) => ({
            source: o.card.sourceId,
            label: o.card.label,
            safe: o.verdict.safe,
            message: o.verdict.message,
            reasons: o.verdict.reasons,
            // With local copies: the card's second verdict (every file copied and read back).
            local: o.local && { safe: o.local.safe, message: o.local.message, reasons: o.local.reasons },
          })),
        };
      };
      const first = facts(main);
      printJson({
        ...first,
        lanes: queueLanes(queue),
        targets: others.map((t) => {
          const f = facts(t);
          return {
            label: t.label,
            workspace: t.workspaceId,
            answered: f.target.answered,
            counts: t.counts,
            problems: f.problems,
            cards: f.cards,
          };
        }),
      });
      return 0;
    }
    const show = { stopped, verbose: flags.verbose === true };
    const lines = [
      `For ${targetName(main)}:`,
      ...targetLines(queue, main, true, show),
      ...queueLaneLines(queue),
    ];
    for (const t of others) {
      const head =
        t.state === 'answered'
          ? `Earlier, for ${targetName(t)}: ${summary(t.counts)}.`
          : `For ${targetName(t)}: ${summary(t.counts)}. ${neverAnswered(t)}`;
      lines.push(head, ...targetLines(queue, t, false, show).map((l) => `  ${l}`));
    }
    if (opened.readOnly) lines.push(`(Read from ${paths.root}, which this user cannot write.)`);
    writeLines(lines);
    return 0;
  } finally {
    opened.close();
  }
}

/** The recent cards (or folders) of the target in use: each one's verdict. */
function recentCards(queue: Queue, stopped: RunStopped | null) {
  return queue
    .recentSources()
    .slice(0, 5)
    .map((sourceId) =>
      cardOffload(queue, { sourceId, label: queue.sources.labelOf(sourceId) }, [], {}, stopped),
    );
}

/** Nothing sends the files now: the next `sync` does (the advice the run's last line gives). */
const NEXT_RUN: RunStopped = { reason: null, once: 'it answers' };

/** Whether a `sync`, `watch` or the app holds this queue now (its lock taken and given back at once if free). */
function agentRunning(root: string): boolean {
  try {
    acquireAgentLock(root, 'Drone Media Sync', 0).release();
    return false;
  } catch (err) {
    return err instanceof QueueLockedError;
  }
}

/** One target's facts: its counts (the main one), problems, why files wait, and each recent card's verdict. */
function targetLines(
  queue: Queue,
  t: TargetSummary,
  withCounts: boolean,
  show: { stopped: RunStopped | null; verbose: boolean },
): string[] {
  queue.useTarget(t);
  const lines: string[] = [];
  if (withCounts)
    for (const [state, c] of Object.entries(t.counts) as Array<
      [FileState, { files: number; bytes: number }]
    >) {
      if (c.files > 0)
        lines.push(`${String(c.files).padStart(7)}  ${LABELS[state]} (${formatBytes(c.bytes)})`);
    }
  const problems = queue.list({ states: ['failed', 'waiting-for-source'], limit: 200 });
  for (const r of problems)
    lines.push(`  ${r.state === 'failed' ? 'FAILED' : 'WAITING'} ${r.absPath}: ${r.errorMessage ?? ''}`);
  // Files on their way that wait for a reason (the server unreachable...): why, in a line per
  // reason, in the words the run said it; the stored technical text only with -v.
  for (const w of waitingReasons(queue)) {
    lines.push(`  ${w.files === 1 ? '1 file waits' : `${w.files} files wait`}: ${w.plain}`);
    if (show.verbose) for (const d of w.details) lines.push(`    Details: ${d}`);
  }
  if (problems.some((r) => r.state === 'failed'))
    lines.push('Fix the cause, then run: drone-media-sync retry --all');
  // Each recent card (or folder): safe to format, or why not.
  for (const o of recentCards(queue, show.stopped)) {
    if (o.local) {
      // Two verdicts: the card's local copies, then the workspace.
      lines.push(
        o.message,
        `  Local copies: ${unlabelled(o.local.message, o.card.label)}`,
        `  In the workspace: ${unlabelled(o.verdict.message, o.card.label)}`,
      );
    } else lines.push(o.verdict.message);
    for (const f of o.flights.filter((x) => x.incomplete))
      lines.push(
        `  flight ${f.folder}: ${f.flags.find((x) => x.severity === 'incomplete')?.message ?? 'incomplete'}`,
      );
  }
  return lines;
}

/**
 * The last error of files still on their way (retried later), in the crew's
 * words (as the run says it: storedPlain), by how many carry it, with the
 * stored technical texts behind each (for -v).
 */
function waitingReasons(queue: Queue): Array<{ plain: string; files: number; details: string[] }> {
  const by = new Map<string, { plain: string; files: number; details: string[] }>();
  for (const r of queue.list({ states: WORKING_STATES, limit: 100_000 })) {
    if (!r.errorMessage) continue;
    const plain = r.errorKind ? storedPlain(r.errorKind, r.errorMessage, 'request') : r.errorMessage;
    const w = by.get(plain) ?? { plain, files: 0, details: [] };
    w.files++;
    if (!w.details.includes(r.errorMessage) && w.details.length < 3) w.details.push(r.errorMessage);
    by.set(plain, w);
  }
  return [...by.values()].sort((a, b) => b.files - a.files).slice(0, 5);
}

/** The failed rows a path names: the file itself, or every failed file under a folder (a card). */
function failedUnder(failed: ReadonlyArray<{ id: number; absPath: string }>, p: string): number[] {
  let abs = path.resolve(p);
  try {
    abs = fs.realpathSync.native(abs);
  } catch {
    // Gone (the card is out): the queue still knows the path it had.
  }
  const inside = abs.endsWith(path.sep) ? abs : abs + path.sep;
  return failed.filter((r) => r.absPath === abs || r.absPath.startsWith(inside)).map((r) => r.id);
}

/**
 * `retry [--all | <path>...]`: puts failed files back in line for the next
 * sync (of the last server used). A path is a failed file or a folder (a card)
 * holding some; a path that names none is said, and the exit code is 1.
 */
export function retryCommand(paths: string[], flags: { state?: string; all?: boolean }): number {
  const sp = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(sp.queue)) {
    process.stdout.write('Nothing synced yet: there is nothing to retry.\n');
    return paths.length > 0 ? 1 : 0;
  }
  requireWritable(sp.root, 'the files to retry');
  const queue = new Queue(sp.queue);
  try {
    // The failed files of the server that answered last (a mistyped address's are not retried for it).
    const [main] = targetsToShow(queue);
    if (!main) {
      process.stdout.write('Nothing synced yet: there is nothing to retry.\n');
      return paths.length > 0 ? 1 : 0;
    }
    queue.useTarget(main);
    if (flags.all || paths.length === 0) {
      const n = queue.retry({ all: true }).length;
      process.stdout.write(
        n === 0
          ? 'No file has failed: there is nothing to retry.\n'
          : `${n} file${n === 1 ? '' : 's'} will be retried at the next sync.\n`,
      );
      return 0;
    }
    const failed = queue.list({ states: ['failed'], limit: 1_000_000 });
    const ids: number[] = [];
    const unknown: string[] = [];
    for (const p of paths) {
      const found = failedUnder(failed, p);
      if (found.length === 0) unknown.push(p);
      ids.push(...found);
    }
    const n = ids.length ? queue.retry({ ids: [...new Set(ids)] }).length : 0;
    const lines = n > 0 ? [`${n} file${n === 1 ? '' : 's'} will be retried at the next sync.`] : [];
    for (const p of unknown)
      lines.push(
        `${p}: no failed file there, nothing to retry (drone-media-sync status lists the failed files).`,
      );
    writeLines(lines);
    return unknown.length > 0 ? 1 : 0;
  } finally {
    queue.close();
  }
}
