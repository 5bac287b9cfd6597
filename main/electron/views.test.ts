import { describe, expect, it } from 'vitest';
import { DmsError, QueueWriteError } from '../core/errors.js';
import { Progress } from '../core/sync/progress.js';
import { RUN_STATES } from '../shared/states.js';
import { appStateView, type AppStateInput } from './views.js';

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
