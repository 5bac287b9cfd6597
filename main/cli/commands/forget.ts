/**
 * `forget --server <url> | --local [--workspace <id>] [--yes]`: drops a
 * target the crew no longer wants (a mistyped address, a server retired):
 * its queue rows, history, accepted flights, wayline matches and its reports
 * in the state folder. It says what it drops first; only `--yes` drops it.
 * The cards, the server, the bucket and the local copies are not touched;
 * another target's verdicts are not changed.
 */
import fs from 'node:fs';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { acquireAgentLock } from '../../core/queue/lock.js';
import { Queue, type TargetSummary } from '../../core/queue/queue.js';
import { FORGET_KEEPS, forgetPlan, forgetTarget } from '../../core/session/forget-target.js';
import { resolveStateDir } from '../context.js';
import { writeLines } from '../output.js';
import { requireWritable } from '../state-access.js';
import { targetName, targetsMatching } from '../targets.js';

export interface ForgetFlags {
  state?: string;
  server?: string;
  local?: boolean;
  workspace?: string;
  yes?: boolean;
}

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
    const plan = forgetPlan(queue, found[0] as TargetSummary, paths.manifests);
    const t = plan.target;
    if (!flags.yes) {
      writeLines([
        `Would forget ${targetName(t)}${t.state === 'answered' ? '' : ', which has never answered'}: ${plan.what}.`,
        FORGET_KEEPS,
        'To forget it, run the same command with --yes.',
      ]);
      return 0;
    }
    forgetTarget(queue, plan);
    writeLines([`Forgot ${targetName(t)}: ${plan.what}.`]);
    return 0;
  } finally {
    queue.close();
    lock.release();
  }
}
