import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from './queue.js';
import {
  TARGET_CHANGES,
  TARGET_STATES,
  targetTransition,
  type TargetChange,
  type TargetState,
} from './targets.js';

// The whole table, written by hand: a change to targets.ts shows up here.
const TABLE: Record<TargetState, Record<TargetChange, string>> = {
  unanswered: { answered: 'answered', forget: 'forgotten' },
  answered: { answered: 'answered', forget: 'forgotten' },
};

describe('target states', () => {
  it('every change from every state', () => {
    for (const s of TARGET_STATES)
      for (const c of TARGET_CHANGES) expect(targetTransition(s, c)).toBe(TABLE[s][c]);
  });
});

describe('the store: one door for a target', () => {
  let dir = '';
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a target answers once a server answer about a file is applied; forget drops its rows only', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-targets-'));
    const q = new Queue(path.join(dir, 'queue.db'));
    const file = { sourceId: 'card:A', relPath: 'DCIM/a.jpg', size: 3, mtimeMs: 1, absPath: '/c/DCIM/a.jpg' };
    q.bindTarget({ key: 'http://wrong#ws', label: 'http://wrong', workspaceId: 'ws' });
    q.observe([file]);
    q.bindTarget({ key: 'http://right#ws', label: 'http://right', workspaceId: 'ws' });
    const [row] = q.observe([file]).pending;
    const hashed = q.apply(row!, {
      type: 'hashed',
      fingerprint: 'f',
      tinyFingerprint: 't',
      info: { name: 'a.jpg', path: '', fileGroupId: 'g', metadata: {}, subFileType: 0, isOriginal: true },
    });
    expect(q.target!.state).toBe('unanswered');
    q.apply(hashed, { type: 'not-known' });
    expect(q.target!.state).toBe('answered');
    const byKey = () => Object.fromEntries(q.targets().map((t) => [t.key, t.state]));
    expect(byKey()).toMatchObject({ 'http://wrong#ws': 'unanswered', 'http://right#ws': 'answered' });

    const wrong = q.targets().find((t) => t.key === 'http://wrong#ws')!;
    expect(q.holdings(wrong.id)).toMatchObject({ sources: ['card:A'], counts: { discovered: { files: 1 } } });
    expect(q.applyTarget(wrong, 'forget')).toBe('forgotten');
    expect(Object.keys(byKey())).not.toContain('http://wrong#ws');
    // The other target's row is untouched.
    expect(q.list({ sourceId: 'card:A', limit: 10 }).map((r) => r.state)).toEqual(['fast-upload-checked']);
    q.close();
  });
});
