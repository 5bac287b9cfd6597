import fs from 'node:fs';
import { Queue, type FileState } from '../../core/queue/queue.js';
import { statePaths } from '../../core/paths.js';
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

/** `status`: what the queue holds, straight from the database (works while an agent runs). */
export function statusCommand(flags: { state?: string; json?: boolean }): number {
  const paths = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(paths.queue)) {
    if (flags.json) printJson({ counts: {}, problems: [] });
    else process.stdout.write('Nothing synced yet.\n');
    return 0;
  }
  const queue = new Queue(paths.queue);
  try {
    const counts = queue.counts();
    const problems = queue.list({ states: ['failed', 'waiting-for-source'], limit: 200 });
    if (flags.json) {
      printJson({
        counts,
        problems: problems.map((r) => ({ path: r.absPath, state: r.state, kind: r.errorKind, reason: r.errorMessage })),
      });
      return 0;
    }
    for (const [state, c] of Object.entries(counts) as Array<[FileState, { files: number; bytes: number }]>) {
      if (c.files > 0) process.stdout.write(`${String(c.files).padStart(7)}  ${LABELS[state]} (${formatBytes(c.bytes)})\n`);
    }
    for (const r of problems) process.stdout.write(`  ${r.state === 'failed' ? 'FAILED' : 'WAITING'} ${r.absPath}: ${r.errorMessage ?? ''}\n`);
    if (problems.some((r) => r.state === 'failed')) process.stdout.write('Fix the cause, then run: drone-media-sync retry --all\n');
    return 0;
  } finally {
    queue.close();
  }
}

/** `retry [--all | <path>...]`: puts failed files back in line for the next sync. */
export function retryCommand(paths: string[], flags: { state?: string; all?: boolean }): number {
  const sp = statePaths(resolveStateDir(flags));
  const queue = new Queue(sp.queue);
  try {
    const n = flags.all || paths.length === 0 ? queue.retry({ all: true }) : queue.retry({ absPaths: paths.map((p) => fs.realpathSync.native(p)) });
    process.stdout.write(`${n} file${n === 1 ? '' : 's'} will be retried at the next sync.\n`);
    return 0;
  } finally {
    queue.close();
  }
}
