import fs from 'node:fs';
import { cardOffload } from '../../core/offload/card.js';
import { statePaths } from '../../core/paths.js';
import { Queue, type FileState, type StateCounts } from '../../core/queue/queue.js';
import { resolveStateDir } from '../context.js';
import { formatBytes, printJson } from '../output.js';

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
 * `status`: what the queue holds for the server it last worked for, straight
 * from the database (works while an agent runs), and one line per other
 * server the queue has worked for.
 */
export function statusCommand(flags: { state?: string; json?: boolean }): number {
  const paths = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(paths.queue)) {
    if (flags.json) printJson({ counts: {}, problems: [], targets: [] });
    else process.stdout.write('Nothing synced yet.\n');
    return 0;
  }
  const queue = new Queue(paths.queue);
  try {
    if (!queue.bindLastTarget()) {
      if (flags.json) printJson({ counts: {}, problems: [], targets: [] });
      else process.stdout.write('Nothing synced yet.\n');
      return 0;
    }
    const current = queue.target;
    const counts = queue.counts();
    const problems = queue.list({ states: ['failed', 'waiting-for-source'], limit: 200 });
    const others = queue
      .targets()
      .filter((t) => t.key !== current?.key && Object.values(t.counts).some((c) => c.files > 0));
    if (flags.json) {
      printJson({
        target: current && { label: current.label, workspace: current.workspaceId },
        counts,
        problems: problems.map((r) => ({
          path: r.absPath,
          state: r.state,
          kind: r.errorKind,
          reason: r.errorMessage,
        })),
        targets: others.map((t) => ({ label: t.label, workspace: t.workspaceId, counts: t.counts })),
        cards: queue
          .recentSources()
          .slice(0, 5)
          .map((sourceId) => {
            const o = cardOffload(queue, { sourceId, label: queue.sources.labelOf(sourceId) });
            return {
              source: sourceId,
              label: o.card.label,
              safe: o.verdict.safe,
              message: o.verdict.message,
              reasons: o.verdict.reasons,
            };
          }),
      });
      return 0;
    }
    if (current) process.stdout.write(`For ${current.label} (workspace ${current.workspaceId}):\n`);
    for (const [state, c] of Object.entries(counts) as Array<[FileState, { files: number; bytes: number }]>) {
      if (c.files > 0)
        process.stdout.write(`${String(c.files).padStart(7)}  ${LABELS[state]} (${formatBytes(c.bytes)})\n`);
    }
    for (const r of problems)
      process.stdout.write(
        `  ${r.state === 'failed' ? 'FAILED' : 'WAITING'} ${r.absPath}: ${r.errorMessage ?? ''}\n`,
      );
    if (problems.some((r) => r.state === 'failed'))
      process.stdout.write('Fix the cause, then run: drone-media-sync retry --all\n');
    // Each recent card (or folder): safe to format, or why not.
    for (const sourceId of queue.recentSources().slice(0, 5)) {
      const o = cardOffload(queue, { sourceId, label: queue.sources.labelOf(sourceId) });
      process.stdout.write(`${o.verdict.message}\n`);
      for (const f of o.flights.filter((x) => x.incomplete))
        process.stdout.write(
          `  flight ${f.folder}: ${f.flags.find((x) => x.severity === 'incomplete')?.message ?? 'incomplete'}\n`,
        );
    }
    for (const t of others)
      process.stdout.write(
        `Earlier, for ${t.label}${t.workspaceId ? ` (workspace ${t.workspaceId})` : ''}: ${summary(t.counts)}.\n`,
      );
    return 0;
  } finally {
    queue.close();
  }
}

/** `retry [--all | <path>...]`: puts failed files back in line for the next sync (of the last server used). */
export function retryCommand(paths: string[], flags: { state?: string; all?: boolean }): number {
  const sp = statePaths(resolveStateDir(flags));
  const queue = new Queue(sp.queue);
  try {
    if (!queue.bindLastTarget()) {
      process.stdout.write('Nothing to retry.\n');
      return 0;
    }
    const n = (
      flags.all || paths.length === 0
        ? queue.retry({ all: true })
        : queue.retry({ absPaths: paths.map((p) => fs.realpathSync.native(p)) })
    ).length;
    process.stdout.write(`${n} file${n === 1 ? '' : 's'} will be retried at the next sync.\n`);
    return 0;
  } finally {
    queue.close();
  }
}
