import { describe, expect, it } from 'vitest';
import {
  IllegalLinkTransition,
  LINK_CHANGE_TYPES,
  LINK_STATES,
  laneMayGo,
  needsAnswer,
  nextLink,
  type LinkChange,
  type LinkState,
  type LinkStateName,
} from './transitions.js';

const state = (
  name: LinkStateName,
  cost: LinkState['cost'] = 'metered',
  answer: LinkState['answer'] = null,
): LinkState => ({
  name,
  cost,
  answer,
});

const CHANGES: Record<string, LinkChange> = {
  'seen unmetered': { type: 'seen', cost: 'unmetered', answer: null, budgetLeft: true },
  'seen metered': { type: 'seen', cost: 'metered', answer: null, budgetLeft: true },
  'seen metered, said yes': { type: 'seen', cost: 'metered', answer: 'yes', budgetLeft: true },
  'seen metered, said no': { type: 'seen', cost: 'metered', answer: 'no', budgetLeft: true },
  'seen roaming': { type: 'seen', cost: 'roaming', answer: null, budgetLeft: true },
  'seen over its limit': { type: 'seen', cost: 'over-limit', answer: null, budgetLeft: true },
  'seen pinned ask': { type: 'seen', cost: 'ask', answer: null, budgetLeft: true },
  'seen roaming, said no': { type: 'seen', cost: 'roaming', answer: 'no', budgetLeft: true },
  'seen unmetered, no budget': { type: 'seen', cost: 'unmetered', answer: null, budgetLeft: false },
  yes: { type: 'answered', answer: 'yes' },
  no: { type: 'answered', answer: 'no' },
  'budget spent': { type: 'budget-spent' },
  'budget renewed': { type: 'budget-renewed' },
};

/**
 * The whole table, written out by hand: state (of a metered link, not asked)
 * x change -> next state, or '!' where the change cannot happen.
 */
const TABLE: Record<string, Record<LinkStateName, LinkStateName | '!'>> = {
  'seen unmetered': { open: 'open', 'first-lane': 'open', held: 'open', spent: 'open' },
  'seen metered': { open: 'first-lane', 'first-lane': 'first-lane', held: 'first-lane', spent: 'first-lane' },
  'seen metered, said yes': { open: 'open', 'first-lane': 'open', held: 'open', spent: 'open' },
  'seen metered, said no': {
    open: 'first-lane',
    'first-lane': 'first-lane',
    held: 'first-lane',
    spent: 'first-lane',
  },
  'seen roaming': { open: 'held', 'first-lane': 'held', held: 'held', spent: 'held' },
  'seen over its limit': { open: 'held', 'first-lane': 'held', held: 'held', spent: 'held' },
  'seen pinned ask': { open: 'held', 'first-lane': 'held', held: 'held', spent: 'held' },
  'seen roaming, said no': { open: 'held', 'first-lane': 'held', held: 'held', spent: 'held' },
  'seen unmetered, no budget': { open: 'spent', 'first-lane': 'spent', held: 'spent', spent: 'spent' },
  yes: { open: '!', 'first-lane': 'open', held: 'open', spent: '!' },
  no: { open: '!', 'first-lane': 'first-lane', held: 'first-lane', spent: '!' },
  'budget spent': { open: 'spent', 'first-lane': 'spent', held: 'spent', spent: '!' },
  'budget renewed': { open: '!', 'first-lane': '!', held: '!', spent: 'first-lane' },
};

describe('the link table', () => {
  it('covers every change type and state', () => {
    expect(new Set(Object.values(CHANGES).map((c) => c.type))).toEqual(new Set(LINK_CHANGE_TYPES));
    for (const row of Object.values(TABLE)) expect(Object.keys(row).sort()).toEqual([...LINK_STATES].sort());
  });

  for (const [name, change] of Object.entries(CHANGES)) {
    for (const from of LINK_STATES) {
      const expected = TABLE[name]?.[from];
      it(`${from} x ${name} -> ${expected}`, () => {
        // 'held' comes from a roaming link; the others from a metered one.
        const s = state(from, from === 'held' ? 'roaming' : 'metered');
        if (expected === '!') expect(() => nextLink(s, change)).toThrow(IllegalLinkTransition);
        else if (name === 'no' && from === 'held') expect(nextLink(s, change).name).toBe('held');
        else expect(nextLink(s, change).name).toBe(expected);
      });
    }
  }

  it('a held (roaming) link the crew refused stays held; a metered one keeps its first lane', () => {
    expect(nextLink(state('held', 'roaming'), { type: 'answered', answer: 'no' })).toEqual(
      state('held', 'roaming', 'no'),
    );
    expect(nextLink(state('first-lane'), { type: 'answered', answer: 'no' })).toEqual(
      state('first-lane', 'metered', 'no'),
    );
  });

  it('a renewed budget goes back to what the cost and the answer say', () => {
    expect(nextLink(state('spent', 'unmetered'), { type: 'budget-renewed' }).name).toBe('open');
    expect(nextLink(state('spent', 'roaming', 'yes'), { type: 'budget-renewed' }).name).toBe('open');
    expect(nextLink(state('spent', 'roaming'), { type: 'budget-renewed' }).name).toBe('held');
  });

  it('lanes per state, and when the crew is asked', () => {
    expect([0, 1, 3].map((l) => laneMayGo('open', l))).toEqual([true, true, true]);
    expect([0, 1, 3].map((l) => laneMayGo('first-lane', l))).toEqual([true, false, false]);
    expect([0, 1].map((l) => laneMayGo('held', l))).toEqual([false, false]);
    expect([0, 1].map((l) => laneMayGo('spent', l))).toEqual([false, false]);
    expect(needsAnswer(state('first-lane'))).toBe(true);
    expect(needsAnswer(state('first-lane', 'metered', 'no'))).toBe(false);
    expect(needsAnswer(state('held', 'roaming'))).toBe(true);
    expect(needsAnswer(state('spent'))).toBe(false);
  });
});
