/**
 * The copy record's transition table, state x change, written out by hand:
 * a change to the table shows here as a diff a reviewer reads.
 */
import { describe, expect, it } from 'vitest';
import {
  COPY_STATES,
  IllegalCopyTransition,
  nextCopyState,
  type CopyChange,
  type CopyState,
} from './copy-transitions.js';

const CHANGES: Record<CopyChange['type'], CopyChange> = {
  want: { type: 'want', path: '/ssd/CARD-1/DCIM/a.JPG' },
  writing: { type: 'writing' },
  verified: {
    type: 'verified',
    copy: { md5: 'aa', xxh3: null, copySize: 1, copyMtimeMs: 1, readBack: 'direct' },
  },
  differs: { type: 'differs', reason: 'other bytes' },
  stopped: { type: 'stopped', reason: 'SSD is full' },
  forget: { type: 'forget' },
};

const x = null; // illegal
// prettier-ignore
const EXPECTED: Record<string, Record<CopyChange['type'], CopyState | null>> = {
  //            want        writing     verified    differs   stopped    forget
  '(none)':  { want: 'wanted', writing: x,         verified: x,          differs: x,        stopped: x,         forget: x },
  wanted:    { want: 'wanted', writing: 'writing', verified: x,          differs: x,        stopped: 'stopped', forget: 'forgotten' },
  writing:   { want: 'wanted', writing: x,         verified: 'verified', differs: 'failed', stopped: 'stopped', forget: x },
  verified:  { want: 'wanted', writing: x,         verified: x,          differs: x,        stopped: x,         forget: 'forgotten' },
  failed:    { want: 'wanted', writing: x,         verified: x,          differs: x,        stopped: x,         forget: 'forgotten' },
  stopped:   { want: 'wanted', writing: x,         verified: x,          differs: x,        stopped: x,         forget: 'forgotten' },
  forgotten: { want: 'wanted', writing: x,         verified: x,          differs: x,        stopped: x,         forget: 'forgotten' },
};

describe('the copy record transition table', () => {
  it('covers every state', () => {
    expect(Object.keys(EXPECTED)).toEqual(['(none)', ...COPY_STATES]);
  });
  for (const [from, row] of Object.entries(EXPECTED))
    for (const [type, to] of Object.entries(row))
      it(`${from} --${type}--> ${to ?? 'illegal'}`, () => {
        const state = from === '(none)' ? null : (from as CopyState);
        const change = CHANGES[type as CopyChange['type']];
        if (to === null) expect(() => nextCopyState(state, change)).toThrow(IllegalCopyTransition);
        else expect(nextCopyState(state, change)).toBe(to);
      });
});
