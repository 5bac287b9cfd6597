/**
 * The one table of how a target (a server and workspace, or the built-in
 * local service) moves. Pure, like transitions.ts for files: the store
 * (queue.ts, `applyTarget`) is its only writer.
 *
 * A target is created by the first run that names it, and stays 'unanswered'
 * until its server has answered a request about a file (fast-upload, an
 * upload's credentials, a callback): a mistyped address never gets there.
 * `status` and `report` say an unanswered target for what it is, beside the
 * others, and never in their place. 'forget' (the crew's `forget`) drops it
 * with every row, history and manifest fact that belongs to it.
 */

export const TARGET_STATES = ['unanswered', 'answered'] as const;
export type TargetState = (typeof TARGET_STATES)[number];

export const TARGET_CHANGES = ['answered', 'forget'] as const;
export type TargetChange = (typeof TARGET_CHANGES)[number];

/** What a change leads to: a state, or 'forgotten' (the target and all it holds are dropped). */
export type TargetNext = TargetState | 'forgotten';

const TABLE: Record<TargetState, Record<TargetChange, TargetNext>> = {
  unanswered: { answered: 'answered', forget: 'forgotten' },
  answered: { answered: 'answered', forget: 'forgotten' },
};

export function targetTransition(state: TargetState, change: TargetChange): TargetNext {
  return TABLE[state][change];
}

export function isTargetState(s: string): s is TargetState {
  return (TARGET_STATES as readonly string[]).includes(s);
}

/** Changes of a file that only a server's answer brings (fast-upload, upload credentials, callback). */
export const SERVER_ANSWERS: ReadonlySet<string> = new Set([
  'not-known',
  'known',
  'multipart-started',
  'upload-begun',
  'uploaded',
  'recorded',
]);
