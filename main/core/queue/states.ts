/**
 * The file states and their named sets, declared once in main/shared/states.ts;
 * the queue's SQL is built from them here.
 */
import type { FileState } from '../../shared/states.js';

export {
  FILE_STATES,
  IDENTIFIED_STATES,
  isWorking,
  NOT_DONE_STATES,
  UNFINISHED_STATES,
  WORKING_STATES,
  type FileState,
  type WorkingState,
} from '../../shared/states.js';

/** `'a','b'` for an SQL `IN (...)`: the states are constants, never user input. */
export function sqlStates(states: readonly FileState[]): string {
  return states.map((s) => `'${s}'`).join(',');
}
