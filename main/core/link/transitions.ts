/**
 * The one table of what the link lets through. Pure: given the link's state
 * and what just happened (the network seen anew, the crew's answer, the
 * budget spent or renewed), the next state; a change that cannot happen in a
 * state is refused (IllegalLinkTransition). The gate (gate.ts) is the only
 * writer: every change goes through its `apply`.
 *
 *   open        every lane goes (an unmetered link, or the crew said yes)
 *   first-lane  a metered link: the first lane goes, the rest waits; the crew
 *               is asked once for this network
 *   held        roaming, over its data limit, or pinned "ask": nothing goes
 *               until the crew says yes
 *   spent       this network's data budget for the day or month is used up
 */

/** What the OS (or the crew's pin) says of the network. */
export type LinkCost = 'unmetered' | 'metered' | 'roaming' | 'over-limit' | 'ask';
export type LinkAnswer = 'yes' | 'no';
export type LinkStateName = 'open' | 'first-lane' | 'held' | 'spent';

export const LINK_STATES: readonly LinkStateName[] = ['open', 'first-lane', 'held', 'spent'];

export interface LinkState {
  name: LinkStateName;
  cost: LinkCost;
  /** The crew's answer for this network, kept (null: not asked or not answered yet). */
  answer: LinkAnswer | null;
}

export type LinkChange =
  /** The network (a new one, or its cost changed): its answer and whether its budget has room. */
  | { type: 'seen'; cost: LinkCost; answer: LinkAnswer | null; budgetLeft: boolean }
  /** The crew answered the question for this network. */
  | { type: 'answered'; answer: LinkAnswer }
  /** The budget has no room for another part. */
  | { type: 'budget-spent' }
  /** A new day or month, or a larger budget: room again. */
  | { type: 'budget-renewed' };

export type LinkChangeType = LinkChange['type'];
export const LINK_CHANGE_TYPES: readonly LinkChangeType[] = [
  'seen',
  'answered',
  'budget-spent',
  'budget-renewed',
];

export class IllegalLinkTransition extends Error {
  constructor(
    readonly from: LinkStateName,
    readonly change: LinkChangeType,
  ) {
    super(`Link: '${change}' cannot happen in state '${from}'.`);
    this.name = 'IllegalLinkTransition';
  }
}

/** The states each change may start from. */
export const LINK_ALLOWED_FROM: Readonly<Record<LinkChangeType, readonly LinkStateName[]>> = {
  seen: LINK_STATES,
  // Only a question that is out can be answered.
  answered: ['first-lane', 'held'],
  'budget-spent': ['open', 'first-lane', 'held'],
  'budget-renewed': ['spent'],
};

/** Where the cost and the answer put a link whose budget has room. */
function byCost(cost: LinkCost, answer: LinkAnswer | null): LinkStateName {
  if (cost === 'unmetered' || answer === 'yes') return 'open';
  return cost === 'metered' ? 'first-lane' : 'held';
}

export function nextLink(state: LinkState, change: LinkChange): LinkState {
  if (!LINK_ALLOWED_FROM[change.type].includes(state.name)) {
    throw new IllegalLinkTransition(state.name, change.type);
  }
  switch (change.type) {
    case 'seen':
      return {
        name: change.budgetLeft ? byCost(change.cost, change.answer) : 'spent',
        cost: change.cost,
        answer: change.answer,
      };
    case 'answered':
      return { ...state, name: byCost(state.cost, change.answer), answer: change.answer };
    case 'budget-spent':
      return { ...state, name: 'spent' };
    case 'budget-renewed':
      return { ...state, name: byCost(state.cost, state.answer) };
  }
}

/** Whether a part of `lane` (0 = the first lane) may start in this state. */
export function laneMayGo(state: LinkStateName, lane: number): boolean {
  if (state === 'open') return true;
  if (state === 'first-lane') return lane === 0;
  return false;
}

/** Whether the crew should be asked: something waits that their yes would let through. */
export function needsAnswer(state: LinkState): boolean {
  return (state.name === 'first-lane' || state.name === 'held') && state.answer === null;
}
