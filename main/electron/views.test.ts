import { describe, expect, it } from 'vitest';
import { DmsError, QueueWriteError, storedPlain } from '../core/errors.js';
import { Progress } from '../core/sync/progress.js';
import { RUN_STATES } from '../shared/states.js';
import type { QueueRow } from '../core/queue/queue.js';
import { appStateView, historyViews, queueItemView, type AppStateInput } from './views.js';

const input = (engine: AppStateInput['engine'], more: Partial<AppStateInput> = {}): AppStateInput => ({
  engine,
  signedIn: true,
  serverLabel: 'https://media.example',
  account: { kind: 'server', server: 'https://media.example', workspaceId: 'ws-1', user: 'crew' },
  startError: null,
  failedCount: 0,
  progress: null,
  cards: [],
  ...more,
});

describe('the window shows the engine’s run state as it is', () => {
  for (const state of RUN_STATES) {
    it(`${state} is shown as ${state}, signed in or not`, () => {
      const engine = { state, error: null, progress: new Progress() };
      expect(appStateView(input(engine)).engine).toBe(state);
      // No override: the engine itself starts in auth-required when there is no sign-in.
      expect(appStateView(input(engine, { signedIn: false })).engine).toBe(state);
    });
  }

  it('a halt carries its reason; a refused sign-in its plain words', () => {
    const full = new QueueWriteError(new DmsError('invalid-input', 'Disk full: free space'), 'disk-full');
    const halted = appStateView(input({ state: 'halted', error: full, progress: new Progress() }));
    expect(halted.halt).toEqual({ reason: 'disk-full', message: 'Disk full: free space' });
    const text = 'Sign in to https://media.example to start uploading. Cards are queued meanwhile.';
    const auth = new DmsError('auth', text, { plain: text });
    const signIn = appStateView(input({ state: 'auth-required', error: auth, progress: new Progress() }));
    expect(signIn.attention).toBe(text);
  });
});

describe('the history says how many files of each flight need the user now', () => {
  const entry = (id: number, folder: string, failed: number, files = 3) => ({
    id,
    sourceId: 'card:1',
    label: 'M30T_CARD',
    folder,
    startedAt: 1_000 * id,
    finishedAt: 1_000 * id + 500,
    files,
    bytes: 0,
    fastUploaded: 0,
    failed,
    wayline: null,
  });
  const failedRow = (relPath: string, sourceId = 'card:1') => ({ sourceId, relPath }) as QueueRow;
  const FLIGHT = 'DJI_202403121015_001_Bridge-North';

  it('from the queue, not from the sync’s events: a later sync with none failed, a retry failing again', () => {
    // Sync 1 saw 2 failures; sync 2 (the card back in) finished the rest and saw none; the 2 still fail.
    const list = historyViews(
      [entry(2, FLIGHT, 0, 1), entry(1, FLIGHT, 2, 0), entry(3, 'DJI_202403121102_002_Solar-A1', 4)],
      [
        failedRow(`DCIM/${FLIGHT}/DJI_0006_W.JPG`),
        failedRow(`DCIM/${FLIGHT}/DJI_0006_T.JPG`),
        failedRow(`DCIM/${FLIGHT}/DJI_0007_W.JPG`, 'card:other'), // another card's: not this card's flight
      ],
    );
    // The newest sync of the flight says 2; the older one points to it (null); a flight whose
    // failures were retried through says 0 although its sync once counted 4.
    expect(list.map((h) => [h.id, h.failed])).toEqual([
      [2, 2],
      [1, null],
      [3, 0],
    ]);
  });
});

describe('a queued file’s error in the window', () => {
  it('says what status says for the same stored error (its HTTP status and socket code read back)', () => {
    const row = {
      id: 1,
      relPath: 'DCIM/DJI_001/DJI_0001.JPG',
      size: 10,
      state: 'failed',
      outcome: null,
      bytesSent: 0,
      errorKind: 'server',
      errorMessage: 'The bucket answered HTTP 503 for PUT DJI_0001.JPG.',
    } as unknown as QueueRow;
    const view = queueItemView(row, 'CARD');
    expect(view.error).toEqual({ kind: 'server', plain: storedPlain('server', row.errorMessage) });
    // A 503 is the server busy or restarting, not "a problem": the same words as `status` and the verdict.
    expect(view.error?.plain).toMatch(/busy or restarting/);
    expect(queueItemView({ ...row, errorKind: null }, 'CARD').error).toBeNull();
  });
});
