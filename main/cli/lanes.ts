/**
 * The lanes' line of the CLI (`status`, and `sync`'s progress without a
 * terminal): per lane what is left and when it should be in the workspace.
 * One function, so the commands add one call each.
 */
import { lanesLine, laneEtas, type LaneEta, type LaneLeft } from '../shared/lanes.js';

/** "Next: RTK files and logs: in the workspace in about 1 min; photos: about 2 h 10 min", or nothing. */
export function laneLines(lanes: readonly LaneEta[] | undefined, copies = false): string[] {
  const line = lanesLine(lanes ?? [], copies);
  return line === '' ? [] : [`Next: ${line}.`];
}

type LaneQueue = { lanesLeft(): LaneLeft[]; recentRate(): number };

/** For a reader of the queue (no engine): what is left per lane at the rate of the last minutes. */
export function queueLanes(queue: LaneQueue): LaneEta[] {
  return laneEtas(queue.lanesLeft(), queue.recentRate());
}

export function queueLaneLines(queue: LaneQueue, copies = false): string[] {
  return laneLines(queueLanes(queue), copies);
}
