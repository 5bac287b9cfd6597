/**
 * Targets as the crew sees them (issue 30): each server and workspace the
 * queue worked for is shown on its own, the one that answers first; one that
 * never answered (a mistyped address) is said for what it is.
 */
import type { Queue, TargetRef, TargetSummary } from '../core/queue/queue.js';
import { canonicalServerUrl, LOCAL_LABEL } from '../core/session/target.js';

export { targetName } from '../core/session/forget-target.js';

const holdsFiles = (t: TargetSummary): boolean => Object.values(t.counts).some((c) => c.files > 0);

/**
 * The targets holding files, the main one first: the one last used whose
 * server answered (a run against a mistyped address since does not take its
 * place), then the others answered, most recent first, then those that never
 * answered.
 */
export function targetsToShow(queue: Queue): TargetSummary[] {
  const withFiles = queue.targets().filter(holdsFiles);
  return [
    ...withFiles.filter((t) => t.state === 'answered'),
    ...withFiles.filter((t) => t.state !== 'answered'),
  ];
}

/** What to say of a target whose server never answered. */
export function neverAnswered(t: TargetSummary): string {
  return `${t.label} has never answered: nothing was sent there. If the address is a mistake: ${forgetCommand(t)}`;
}

export function forgetCommand(t: TargetRef): string {
  const server = t.label === LOCAL_LABEL ? '--local' : `--server ${t.label}`;
  return `drone-media-sync forget ${server}${t.workspaceId ? ` --workspace ${t.workspaceId}` : ''}`;
}

/** The targets an address (or the built-in service, `local`) and an optional workspace name. */
export function targetsMatching(
  queue: Queue,
  which: { server?: string; local?: boolean; workspace?: string },
): TargetSummary[] {
  return queue.targets().filter((t) => {
    const isLocal = t.key.startsWith('local:');
    if (which.local ? !isLocal : isLocal || !which.server) return false;
    if (!which.local && canonicalServerUrl(t.label) !== canonicalServerUrl(which.server ?? '')) return false;
    return which.workspace === undefined || t.workspaceId === which.workspace;
  });
}
