import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import type { FileInfo } from './file-info.js';
import type { QueueRow, Verification } from './rows.js';
import { FILE_STATES, type FileState } from './states.js';
import {
  CHANGE_TYPES,
  clearsParts,
  IllegalTransition,
  MAY_WAIT,
  mayWait,
  transition,
  type Change,
  type ChangeType,
} from './transitions.js';

// The whole table: every change from every state, the next state when it is
// allowed, '—' when the store must refuse it. Written out by hand (not
// derived from the module) so that a change to the table shows up here.
const _ = '—';
type Cell = FileState | typeof _;
const S = FILE_STATES;
//                           discovered  hashed   fast-upload-checked     uploading    uploaded     done     failed    waiting-for-source
const TABLE: Record<ChangeType, Cell[]> = {
  hashed: ['hashed', _, _, _, _, _, _, _],
  'check-skipped': [_, 'fast-upload-checked', _, _, _, _, _, _],
  'not-known': [_, 'fast-upload-checked', _, _, _, _, _, _],
  known: [_, 'done', 'done', 'done', 'done', _, _, _],
  'upload-begun': [_, _, 'uploading', 'uploading', _, _, _, _],
  'multipart-started': [_, _, 'uploading', 'uploading', _, _, _, _],
  'multipart-reset': [_, _, _, 'uploading', _, _, _, _],
  'upload-reset': [_, _, 'fast-upload-checked', 'fast-upload-checked', _, _, _, _],
  uploaded: [_, _, 'uploaded', 'uploaded', _, _, _, _],
  'callback-sent': [_, _, _, _, 'uploaded', _, _, _],
  recorded: [_, _, _, _, 'done', _, _, _],
  stored: [_, _, _, _, 'done', _, _, _],
  verified: [_, _, _, _, _, 'done', _, _],
  retry: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded', _, _, _],
  defer: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded', _, _, _],
  failed: ['failed', 'failed', 'failed', 'failed', 'failed', _, 'failed', _],
  parked: [
    'waiting-for-source',
    'waiting-for-source',
    'waiting-for-source',
    'waiting-for-source',
    'waiting-for-source',
    _,
    _,
    _,
  ],
  // Back where it was (these rows were parked or failed while uploading).
  resumed: [_, _, _, _, _, _, _, 'uploading'],
  retried: [_, _, _, _, _, _, 'uploading', _],
  woken: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded', _, _, _],
  'fresh-tries': ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded', _, _, _],
};

const NOW = 1_700_000_000_000;
const info: FileInfo = {
  name: 'DJI_0001.JPG',
  path: '',
  fileGroupId: 'g',
  metadata: {},
  subFileType: 0,
  isOriginal: true,
};
const checked: Verification = { at: NOW, by: 'bucket', found: true, size: 10, checksum: 'match' };
const err = new DmsError('network', 'down');

const CHANGES: Record<ChangeType, Change> = {
  hashed: { type: 'hashed', fingerprint: 'a'.repeat(32), tinyFingerprint: 't', info },
  'check-skipped': { type: 'check-skipped' },
  'not-known': { type: 'not-known' },
  known: { type: 'known', verified: checked },
  'upload-begun': { type: 'upload-begun', objectKey: 'p/k' },
  'multipart-started': { type: 'multipart-started', objectKey: 'p/k', uploadId: 'u', partSize: 8 },
  'multipart-reset': { type: 'multipart-reset' },
  'upload-reset': { type: 'upload-reset' },
  uploaded: { type: 'uploaded', objectKey: 'p/k', bytesSent: 10, verified: checked },
  'callback-sent': { type: 'callback-sent' },
  recorded: { type: 'recorded' },
  stored: { type: 'stored', verified: checked },
  verified: { type: 'verified', verified: checked },
  retry: { type: 'retry', error: err, at: NOW + 5000, callbackSettled: false },
  defer: { type: 'defer', at: NOW + 5000, message: 'waiting for a twin' },
  failed: { type: 'failed', error: err, callbackSettled: false },
  parked: { type: 'parked', message: 'card removed' },
  resumed: { type: 'resumed' },
  retried: { type: 'retried' },
  woken: { type: 'woken' },
  'fresh-tries': { type: 'fresh-tries' },
};

/** A row in `state` with everything that state carries (parked and failed ones stopped while uploading). */
function rowIn(state: FileState): QueueRow {
  const base = {
    id: 1,
    targetId: 1,
    kind: 'media' as const,
    sourceId: 'card:1',
    relPath: 'DCIM/DJI_0001.JPG',
    absPath: '/media/c/DCIM/DJI_0001.JPG',
    size: 10,
    mtimeMs: 1,
    resumeState: null,
    bytesSent: 0,
    attempts: 0,
    nextAttemptAt: 0,
    errorKind: null,
    errorMessage: null,
    createdAt: 1,
    updatedAt: 1,
    verified: null,
    lane: 'photos' as const,
  };
  const id = { fingerprint: 'a'.repeat(32), tinyFingerprint: 't', info };
  const upload = { objectKey: 'p/k', multipart: { uploadId: 'u', partSize: 8 }, callbackUnknown: false };
  switch (state) {
    case 'discovered':
      return { ...base, state };
    case 'hashed':
      return { ...base, ...id, state };
    case 'fast-upload-checked':
      return { ...base, ...id, objectKey: null, multipart: null, callbackUnknown: false, state };
    case 'uploading':
      return { ...base, ...id, ...upload, state };
    case 'uploaded':
      return { ...base, ...id, ...upload, multipart: null, objectKey: 'p/k', state };
    case 'done':
      return { ...base, ...id, state, outcome: 'uploaded', doneAt: 1, objectKey: 'p/k', serverKey: null };
    case 'failed':
    case 'waiting-for-source':
      return { ...base, ...id, ...upload, resumeState: 'uploading', state };
  }
}

describe('the transition table', () => {
  it('lists every change', () => {
    expect(Object.keys(TABLE).sort()).toEqual([...CHANGE_TYPES].sort());
  });

  for (const change of CHANGE_TYPES) {
    for (const [i, from] of S.entries()) {
      const want = TABLE[change][i];
      it(`${change} from ${from}: ${want === _ ? 'refused' : want}`, () => {
        const row = rowIn(from);
        if (want === _) {
          expect(() => transition(row, CHANGES[change], NOW)).toThrow(IllegalTransition);
        } else {
          expect(transition(row, CHANGES[change], NOW).state).toBe(want);
        }
      });
    }
  }
});

describe('what each change carries', () => {
  it('known after a callback whose answer was lost counts as the callback, else as fast-upload', () => {
    const uploaded = { ...rowIn('uploaded'), callbackUnknown: true } as QueueRow;
    const a = transition(uploaded, CHANGES.known, NOW);
    const b = transition(rowIn('hashed'), CHANGES.known, NOW);
    expect(a.state === 'done' && a.outcome).toBe('uploaded');
    expect(b.state === 'done' && b.outcome).toBe('fast-uploaded');
    expect(b.state === 'done' && b.doneAt).toBe(NOW);
  });

  it('a done row keeps the check made at upload, and no part log', () => {
    const up = transition(rowIn('uploading'), CHANGES.uploaded, NOW);
    const done = transition(up, CHANGES.recorded, NOW);
    expect(done).toMatchObject({ state: 'done', objectKey: 'p/k', verified: checked, bytesSent: 10 });
    expect('multipart' in done).toBe(false);
  });

  it('a retry counts an attempt and keeps the reason; a settled callback clears its flag', () => {
    const row = { ...rowIn('uploaded'), callbackUnknown: true } as QueueRow;
    const kept = transition(row, CHANGES.retry, NOW);
    const cleared = transition(row, { ...(CHANGES.retry as object), callbackSettled: true } as Change, NOW);
    expect(kept).toMatchObject({ attempts: 1, nextAttemptAt: NOW + 5000, errorKind: 'network' });
    expect('callbackUnknown' in kept && kept.callbackUnknown).toBe(true);
    expect('callbackUnknown' in cleared && cleared.callbackUnknown).toBe(false);
  });

  it('a deferred row is not a failure; waking it makes it due', () => {
    const deferred = transition(rowIn('hashed'), CHANGES.defer, NOW);
    expect(deferred).toMatchObject({ attempts: 0, errorKind: null, errorMessage: 'waiting for a twin' });
    expect(transition(deferred, CHANGES.woken, NOW)).toMatchObject({ nextAttemptAt: 0, errorMessage: null });
  });

  it('a new one-shot run gives a file its tries again, due now; a lost callback answer keeps its settle wait', () => {
    const tried = transition(transition(rowIn('uploading'), CHANGES.retry, NOW), CHANGES.retry, NOW);
    expect(tried).toMatchObject({ attempts: 2, nextAttemptAt: NOW + 5000 });
    expect(transition(tried, CHANGES['fresh-tries'], NOW)).toMatchObject({
      attempts: 0,
      nextAttemptAt: 0,
      errorKind: 'network',
    });
    const settling = {
      ...transition(rowIn('uploaded'), CHANGES.retry, NOW),
      callbackUnknown: true,
    } as QueueRow;
    expect(transition(settling, CHANGES['fresh-tries'], NOW)).toMatchObject({
      attempts: 0,
      nextAttemptAt: NOW + 5000,
    });
  });

  it('parked and failed rows go back to where they were, with their upload', () => {
    const parked = transition(rowIn('uploading'), CHANGES.parked, NOW);
    expect(parked).toMatchObject({ resumeState: 'uploading', errorKind: 'source-missing' });
    const back = transition(parked, CHANGES.resumed, NOW);
    expect(back).toMatchObject({ state: 'uploading', multipart: { uploadId: 'u' }, errorKind: null });
    const failed = transition(rowIn('hashed'), CHANGES.failed, NOW);
    expect(transition(failed, CHANGES.retried, NOW)).toMatchObject({ state: 'hashed', attempts: 0 });
    const early = transition(rowIn('discovered'), CHANGES.parked, NOW);
    expect(transition(early, CHANGES.resumed, NOW).state).toBe('discovered');
  });

  it('a new key never keeps the multipart upload of another', () => {
    const up = transition(rowIn('uploading'), { type: 'upload-begun', objectKey: 'p/other' }, NOW);
    expect(up).toMatchObject({ objectKey: 'p/other', multipart: null });
    const same = transition(rowIn('uploading'), { type: 'upload-begun', objectKey: 'p/k' }, NOW);
    expect(same).toMatchObject({ multipart: { uploadId: 'u' } });
  });
});

describe('changes whose record may wait for the next commit', () => {
  it('are only those a crash may lose: the step is done again, sending nothing and posting nothing twice', () => {
    // Hand-written: a change the engine acts on outside (bytes, the callback, a wait) is never in it.
    expect([...MAY_WAIT].sort()).toEqual([
      'check-skipped',
      'hashed',
      'known',
      'not-known',
      'recorded',
      'stored',
      'verified',
    ]);
  });
});

describe('what a change writes besides the row (its state x change, only where allowed)', () => {
  const allowedPairs = (): Array<[FileState, ChangeType]> =>
    S.flatMap((from, i) =>
      CHANGE_TYPES.filter((c) => TABLE[c][i] !== _).map((c) => [from, c] as [FileState, ChangeType]),
    );

  it('waits for the next commit: MAY_WAIT, and a single PUT\'s "uploaded" (nothing of the upload recorded)', () => {
    const waiting = allowedPairs()
      .filter(([from, c]) => mayWait(from, c) && !MAY_WAIT.has(c))
      .map(([from, c]) => `${c} from ${from}`);
    expect(waiting).toEqual(['uploaded from fast-upload-checked']);
    // From 'uploading' (multipart, or a PUT the store knew of) it commits at once.
    expect(mayWait('uploading', 'uploaded')).toBe(false);
    expect(mayWait('uploaded', 'callback-sent')).toBe(false);
  });

  it('clears the part log only on the way out of "uploading", where parts are recorded', () => {
    const clearing = allowedPairs()
      .filter(([from, c]) => clearsParts(from, c))
      .map(([from, c]) => `${c} from ${from}`)
      .sort();
    expect(clearing).toEqual([
      'known from uploading',
      'multipart-reset from uploading',
      'multipart-started from uploading',
      'upload-reset from uploading',
      'uploaded from uploading',
    ]);
  });
});
