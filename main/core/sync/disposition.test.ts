import { describe, expect, it } from 'vitest';
import { DmsError, ERROR_KINDS, type ErrorKind } from '../errors.js';
import type { WorkingRow } from '../queue/rows.js';
import { WORKING_STATES, type WorkingState } from '../queue/states.js';
import { dispose, type Disposition, type FailureFacts } from './disposition.js';
import {
  CallbackNotActedOn,
  CallbackOutcomeUnknown,
  FileChangedError,
  UNCLEAR_ANSWER_TRIES,
  UnclearAnswerError,
} from './step-errors.js';

const NOW = 1_000_000;
const facts = (disk: 'changed' | 'gone' | 'same' = 'same'): FailureFacts => ({
  now: NOW,
  settleMs: 60_000,
  backoff: { baseMs: 2000, capMs: 300_000 },
  disk: () => disk,
  random: () => 0.5,
});

function rowIn(state: WorkingState, attempts = 0): WorkingRow {
  const base = {
    id: 1,
    targetId: 1,
    kind: 'media' as const,
    sourceId: 'card:1',
    relPath: 'a.jpg',
    absPath: '/c/a.jpg',
    size: 1,
    mtimeMs: 1,
    resumeState: null,
    bytesSent: 0,
    attempts,
    nextAttemptAt: 0,
    errorKind: null,
    errorMessage: null,
    createdAt: 1,
    updatedAt: 1,
    verified: null,
    lane: 'photos' as const,
  };
  const id = {
    fingerprint: 'f'.repeat(32),
    tinyFingerprint: 't',
    info: { name: 'a.jpg', path: '', fileGroupId: 'g', metadata: {}, subFileType: 0, isOriginal: true },
  };
  if (state === 'discovered') return { ...base, state };
  if (state === 'hashed') return { ...base, ...id, state };
  const upload = { objectKey: 'k', multipart: null, callbackUnknown: false };
  return state === 'uploaded' ? { ...base, ...id, ...upload, state } : { ...base, ...id, ...upload, state };
}

/** What happens, in a word: the act, and for an applied change its type (and "offline" when the run waits). */
function word(d: Disposition): string {
  if (d.act !== 'apply') return d.act;
  return `${d.change.type}${d.offline ? '+offline' : ''}`;
}

// Every error kind, in every working state: plain errors of the kind, with
// its default retryability. A missing source depends on the disk (below).
const BY_KIND: Record<ErrorKind, string> = {
  auth: 'sign-in',
  network: 'retry+offline',
  timeout: 'retry+offline',
  throttled: 'retry+offline',
  server: 'retry+offline',
  rejected: 'failed',
  'malformed-response': 'retry+offline',
  storage: 'retry',
  'source-missing': 'retry',
  'invalid-input': 'failed',
  cancelled: 'ignore',
};

describe('the failure ladder', () => {
  for (const kind of ERROR_KINDS) {
    for (const state of WORKING_STATES) {
      it(`${kind} in ${state}: ${BY_KIND[kind]}`, () => {
        expect(word(dispose(rowIn(state), new DmsError(kind, 'x'), facts()))).toBe(BY_KIND[kind]);
      });
    }
  }

  it('a missing file: gone waits for the card, changed is read again, there unchanged retries', () => {
    const gone = dispose(rowIn('uploading'), new DmsError('source-missing', 'x'), facts('gone'));
    expect(word(gone)).toBe('parked');
    expect(gone.act === 'apply' && gone.report).toBe('waiting-for-source');
    expect(word(dispose(rowIn('hashed'), new DmsError('source-missing', 'x'), facts('changed')))).toBe(
      'reread',
    );
    expect(word(dispose(rowIn('hashed'), new FileChangedError('a.jpg'), facts('same')))).toBe('reread');
    expect(word(dispose(rowIn('hashed'), new FileChangedError('a.jpg'), facts('gone')))).toBe('parked');
  });

  it('a callback cut by us is checked after the settle time, never counted as a failure', () => {
    const d = dispose(
      rowIn('uploaded'),
      new CallbackOutcomeUnknown(new DmsError('cancelled', 'Paused.')),
      facts(),
    );
    expect(d).toMatchObject({
      act: 'apply',
      report: null,
      change: { type: 'defer', at: NOW + 60_000, message: null },
    });
  });

  it('a callback whose answer was lost is retried no sooner than the settle time, its flag kept', () => {
    const d = dispose(rowIn('uploaded'), new CallbackOutcomeUnknown(new DmsError('timeout', 'x')), facts());
    expect(d.act === 'apply' && d.change).toMatchObject({ type: 'retry', callbackSettled: false });
    expect(d.act === 'apply' && d.change.type === 'retry' && d.change.at).toBeGreaterThanOrEqual(
      NOW + 60_000,
    );
  });

  it('a callback refused before it was acted on settles its flag', () => {
    const refused = dispose(
      rowIn('uploaded'),
      new CallbackNotActedOn(new DmsError('rejected', 'bad', { retryable: false })),
      facts(),
    );
    expect(refused.act === 'apply' && refused.change).toMatchObject({
      type: 'failed',
      callbackSettled: true,
    });
    const unreached = dispose(
      rowIn('uploaded'),
      new CallbackNotActedOn(new DmsError('network', 'refused')),
      facts(),
    );
    expect(unreached.act === 'apply' && unreached.change).toMatchObject({
      type: 'retry',
      callbackSettled: true,
    });
  });

  it('an unclear answer is retried for this file alone, then failed with the server’s words', () => {
    const unclear = new UnclearAnswerError('a.jpg', 500, 'oops');
    expect(word(dispose(rowIn('uploaded', 0), unclear, facts()))).toBe('retry');
    const last = dispose(rowIn('uploaded', UNCLEAR_ANSWER_TRIES - 1), unclear, facts());
    expect(word(last)).toBe('failed');
    expect(last.act === 'apply' && last.change.type === 'failed' && last.change.error.retryable).toBe(false);
    expect(last.act === 'apply' && last.change.type === 'failed' && last.change.error.message).toContain(
      '"oops"',
    );
  });

  it('waits at least as long as the server asked (Retry-After)', () => {
    const d = dispose(rowIn('hashed'), new DmsError('throttled', 'slow', { retryAfterMs: 90_000 }), facts());
    expect(d.act === 'apply' && d.change.type === 'retry' && d.change.at).toBe(NOW + 90_000);
  });
});
