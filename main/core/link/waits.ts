/**
 * What waits for a better network when a one-shot run (`sync`) ends with
 * lanes the link's policy holds, in the crew's words and with what to do:
 * "41 GB of photos and videos wait for an unmetered network: run
 * `drone-media-sync link answer yes` to send them over this one, or sync
 * again on another network."
 */
import { formatBytes } from '../../shared/sizes.js';
import { LANE_NAMES, type LaneName } from '../queue/lanes.js';
import { andList, LANE_WORDS, type LinkGate } from './gate.js';
import type { LinkCost, LinkStateName } from './transitions.js';

export interface LinkWaits {
  state: LinkStateName;
  cost: LinkCost;
  /** The network's name for the crew. */
  network: string;
  files: number;
  bytes: number;
  lanes: LaneName[];
  /** The queue rows that wait (not to be listed one by one). */
  ids: ReadonlySet<number>;
  message: string;
}

const ANSWER_YES = '`drone-media-sync link answer yes`';

const HELD_WHY: Record<LinkCost, string> = {
  unmetered: 'this network is held',
  metered: 'this network is metered',
  roaming: 'this network is roaming',
  'over-limit': 'this network is over its data limit',
  ask: 'this network is pinned "ask first"',
};

/**
 * The rows left after the run (not done, not failed) that the gate holds,
 * and the one sentence that says so; null when the link holds nothing.
 */
export function linkWaits(
  gate: LinkGate,
  left: ReadonlyArray<{ id: number; lane: LaneName; size: number; state: string }>,
): LinkWaits | null {
  const held = left.filter((r) => r.state !== 'failed' && gate.holds(r.lane));
  if (held.length === 0) return null;
  const lanes = LANE_NAMES.filter((l) => held.some((r) => r.lane === l));
  const bytes = held.reduce((n, r) => n + r.size, 0);
  const what = `${formatBytes(bytes)} of ${andList(lanes.map((l) => LANE_WORDS[l]))}`;
  const snap = gate.snapshot();
  const { name, cost, answer } = snap.state;
  let message: string;
  if (name === 'spent') {
    const b = snap.budget;
    const per = b?.per === 'day' ? 'day' : 'month';
    message =
      `${what} wait: this network's data budget${b ? ` (${formatBytes(b.bytes)} per ${per})` : ''} is used up. ` +
      `Sync again ${per === 'day' ? 'tomorrow' : 'next month'} or on another network, or raise it: \`drone-media-sync link budget <size>\`.`;
  } else if (answer === 'no')
    message = `${what} wait: you answered no for this network. Run ${ANSWER_YES} to send them over it, or sync again on another network.`;
  else if (name === 'first-lane')
    message = `${what} wait for an unmetered network: run ${ANSWER_YES} to send them over this one, or sync again on another network.`;
  else
    message = `${what} wait: ${HELD_WHY[cost]}. Run ${ANSWER_YES} to send them over it, or sync again on another network.`;
  return {
    state: name,
    cost,
    network: snap.network.label,
    files: held.length,
    bytes,
    lanes,
    ids: new Set(held.map((r) => r.id)),
    message,
  };
}
