/**
 * `forget --server <url> | --local [--workspace <id>] [--yes]`: drops a
 * target the crew no longer wants (a mistyped address, a server retired):
 * its queue rows, history, accepted flights, wayline matches and its reports
 * in the state folder. It says what it drops first; only `--yes` drops it.
 * The cards, the server, the bucket and the local copies are not touched;
 * another target's verdicts are not changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { acquireAgentLock } from '../../core/queue/lock.js';
import { Queue, type TargetSummary } from '../../core/queue/queue.js';
import { resolveStateDir } from '../context.js';
import { formatBytes, writeLines } from '../output.js';
import { requireWritable } from '../state-access.js';
import { targetName, targetsMatching } from '../targets.js';

export interface ForgetFlags {
  state?: string;
  server?: string;
  local?: boolean;
  workspace?: string;
  yes?: boolean;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export function forgetCommand(flags: ForgetFlags): number {
  if (!flags.server === !flags.local)
    throw new DmsError(
      'invalid-input',
      'Say which target to forget: --server <url> (as given to sync) or --local (the built-in local service), and --workspace <id> when it has several.',
      { retryable: false },
    );
  const paths = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(paths.queue)) {
    writeLines(['Nothing synced yet: there is nothing to forget.']);
    return 1;
  }
  requireWritable(paths.root, 'what is forgotten');
  // Not beside a running agent: it may be working for this very target.
  const lock = acquireAgentLock(paths.root, 'Drone Media Sync', 0);
  const queue = new Queue(paths.queue);
  try {
    const found = targetsMatching(queue, flags);
    const asked = flags.local ? 'the built-in local service' : flags.server;
    if (found.length !== 1) {
      const known = queue.targets().filter((t) => t.key !== 'legacy:');
      writeLines([
        found.length === 0
          ? `Nothing was synced to ${asked}${flags.workspace ? ` (workspace ${flags.workspace})` : ''}: there is nothing to forget.`
          : `${asked} has ${found.length} workspaces here: say which one with --workspace (${found.map((t) => t.workspaceId).join(', ')}).`,
        ...(known.length ? ['Synced to:', ...known.map((t) => `  ${targetName(t)}`)] : []),
      ]);
      return 1;
    }
    const t = found[0] as TargetSummary;
    const reports = reportsOf(paths.manifests, t.key);
    const what = holdingsText(queue, t, reports.length);
    if (!flags.yes) {
      writeLines([
        `Would forget ${targetName(t)}${t.state === 'answered' ? '' : ', which has never answered'}: ${what}.`,
        'The cards, the server and its bucket, and the local copies are not touched; other servers are not changed.',
        'To forget it, run the same command with --yes.',
      ]);
      return 0;
    }
    queue.applyTarget(t, 'forget');
    for (const dir of reports) fs.rmSync(dir, { recursive: true, force: true });
    writeLines([`Forgot ${targetName(t)}: ${what}.`]);
    return 0;
  } finally {
    queue.close();
    lock.release();
  }
}

/** What forgetting drops, in a sentence. */
function holdingsText(queue: Queue, t: TargetSummary, reports: number): string {
  const h = queue.holdings(t.id);
  const done = h.counts.done;
  const all = Object.values(h.counts).reduce(
    (a, c) => ({ files: a.files + c.files, bytes: a.bytes + c.bytes }),
    {
      files: 0,
      bytes: 0,
    },
  );
  const notDone = all.files - done.files;
  const cards = h.sources.map((s) => queue.sources.labelOf(s));
  const parts = [
    `the record of ${plural(all.files, 'file')} (${formatBytes(all.bytes)}; ${done.files} done, ${notDone} not done) from ${plural(cards.length, 'card or folder', 'cards or folders')}${cards.length ? ` (${cards.slice(0, 5).join(', ')}${cards.length > 5 ? ' and more' : ''})` : ''}`,
  ];
  if (h.historyEntries) parts.push(`${plural(h.historyEntries, 'history entry', 'history entries')}`);
  if (h.acceptedFlights) parts.push(`${plural(h.acceptedFlights, 'accepted flight')}`);
  if (h.waylineMatches) parts.push(`${plural(h.waylineMatches, 'wayline match', 'wayline matches')}`);
  parts.push(`${plural(reports, 'report')} in ${path.basename(path.dirname(queue.path))}/manifests`);
  return parts.join(', ');
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
