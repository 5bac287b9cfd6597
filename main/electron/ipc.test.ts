import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { DmsError } from '../core/errors.js';
import { UserError } from './failures.js';
import { CHANNEL_NAMES, type Result } from '../shared/ipc.js';

// Electron is mocked: its binary cannot be downloaded here (see electron-mock.ts).
vi.mock('electron', () => import('../../test/electron/electron-mock.js').then((m) => m.electronModule));
const { electron, fake, FakeBrowserWindow, FakeWebContents } =
  await import('../../test/electron/electron-mock.js');
const { createHandlers, electronShellActions, HELP_URLS, registerIpc } = await import('./ipc.js');
const { INTERNAL_MESSAGE } = await import('./failures.js');

const INDEX = path.resolve('/opt/dms/resources/app.asar/renderer/dist/index.html');
const OWN_URL = pathToFileURL(INDEX).href;

function fakeController() {
  const state = { engine: 'idle' } as never;
  return {
    state: vi.fn(() => state),
    queueList: vi.fn(() => []),
    retry: vi.fn(() => ({ count: 1 })),
    pause: vi.fn(() => state),
    resume: vi.fn(() => state),
    syncNow: vi.fn(() => Promise.resolve(state)),
    history: vi.fn(() => []),
    setWayline: vi.fn(() => Promise.resolve({ updated: 1 })),
    waylines: vi.fn(() => Promise.resolve({ list: [], page: 1, pageSize: 10, total: 0 })),
    settings: vi.fn(() => ({}) as never),
    saveSettings: vi.fn(() => Promise.resolve({} as never)),
    forgetDestination: vi.fn(() => Promise.resolve({ destinations: [] } as never)),
    targets: vi.fn(() => []),
    forgetTarget: vi.fn(() => Promise.resolve([])),
    linkAnswer: vi.fn(() => ({}) as never),
    linkPin: vi.fn(() => Promise.resolve({} as never)),
    login: vi.fn(() => Promise.resolve({ workspaceId: 'ws' })),
    setToken: vi.fn(() => Promise.resolve({ workspaceId: 'ws' })),
    signOut: vi.fn(() => Promise.resolve({ signedIn: false as const })),
    testConnection: vi.fn(() => Promise.resolve({ message: 'Connected: 1 wayline in this workspace.' })),
    flights: vi.fn(() => []),
    flight: vi.fn(() => ({}) as never),
    acceptFlight: vi.fn(() => ({}) as never),
    mapTile: vi.fn(() => Promise.resolve('data:image/png;base64,')),
  };
}

let win: InstanceType<typeof FakeBrowserWindow>;
let c: ReturnType<typeof fakeController>;

beforeEach(() => {
  fake.reset();
  vi.clearAllMocks();
  win = new FakeBrowserWindow({});
  win.webContents.mainFrame.url = OWN_URL;
  c = fakeController();
  registerIpc({
    handlers: createHandlers(c, electronShellActions({ window: () => win as never, logDir: '/var/log/dms' })),
    trusted: { webContents: () => win.webContents as never, indexHtml: INDEX },
    log: pino({ level: 'silent' }),
  });
});

/** Calls a registered handler the way ipcMain would, from the given sender. */
function invoke(
  channel: string,
  payload: unknown,
  from: { sender?: unknown; url?: string; parent?: unknown } = {},
): Promise<Result<unknown>> {
  const handler = fake.ipcHandlers.get(channel);
  if (!handler) throw new Error(`no handler for ${channel}`);
  const event = {
    sender: from.sender ?? win.webContents,
    senderFrame: { url: from.url ?? `${OWN_URL}#/settings`, parent: from.parent ?? null },
  };
  return handler(event, payload) as Promise<Result<unknown>>;
}

describe('IPC handlers', () => {
  it('registers exactly one handler per channel of the contract', () => {
    expect([...fake.ipcHandlers.keys()].sort()).toEqual([...CHANNEL_NAMES].sort());
  });

  it('a valid request reaches the controller and comes back as a Result', async () => {
    expect(await invoke('queue:list', { filter: 'failed', limit: 5 })).toEqual({ ok: true, value: [] });
    expect(c.queueList).toHaveBeenCalledWith('failed', 5);
    expect(await invoke('queue:retry', { all: true })).toEqual({ ok: true, value: { count: 1 } });
    expect(c.retry).toHaveBeenCalledWith({ all: true });
    await invoke('app:get-state', undefined);
    await invoke('sync:pause', null);
    await invoke('sync:resume', {});
    expect(c.state).toHaveBeenCalledOnce();
    expect(c.pause).toHaveBeenCalledOnce();
    expect(c.resume).toHaveBeenCalledOnce();
    await invoke('waylines:list', { orderBy: 'update_time desc', page: 2, pageSize: 20, favorited: true });
    expect(c.waylines).toHaveBeenCalledWith({
      orderBy: 'update_time desc',
      page: 2,
      pageSize: 20,
      favorited: true,
    });
    await invoke('auth:login', { serverUrl: 'https://m.example.com', username: 'crew', password: 'pw' });
    expect(c.login).toHaveBeenCalledWith('https://m.example.com', 'crew', 'pw');
  });

  it('copies:forget reaches the controller once, with the folder (trimmed), and answers the settings', async () => {
    expect(await invoke('copies:forget', { path: ' /media/crew/T7/DroneCopies ' })).toEqual({
      ok: true,
      value: { destinations: [] },
    });
    expect(c.forgetDestination).toHaveBeenCalledExactlyOnceWith('/media/crew/T7/DroneCopies');
    // What the controller refuses (not a destination) crosses as plain words.
    c.forgetDestination.mockRejectedValueOnce(
      new UserError('invalid-input', '/x is not a copy destination: there is nothing to forget.'),
    );
    expect(await invoke('copies:forget', { path: '/x' })).toEqual({
      ok: false,
      error: { kind: 'invalid-input', message: '/x is not a copy destination: there is nothing to forget.' },
    });
  });

  it('targets:list and targets:forget reach the controller, the key as given; a refusal crosses as plain words', async () => {
    expect(await invoke('targets:list', undefined)).toEqual({ ok: true, value: [] });
    expect(c.targets).toHaveBeenCalledOnce();
    expect(await invoke('targets:forget', { key: 'http://127.0.0.1:1#ws-typo' })).toEqual({
      ok: true,
      value: [],
    });
    expect(c.forgetTarget).toHaveBeenCalledExactlyOnceWith('http://127.0.0.1:1#ws-typo');
    c.forgetTarget.mockRejectedValueOnce(
      new UserError('invalid-input', 'It is where the app sends cards now.'),
    );
    expect(await invoke('targets:forget', { key: 'k' })).toEqual({
      ok: false,
      error: { kind: 'invalid-input', message: 'It is where the app sends cards now.' },
    });
  });

  it.each([
    ['copies:forget', { path: '' }],
    ['targets:forget', { key: '' }],
    ['targets:forget', { key: 'k', all: true }],
    ['targets:list', { all: true }],
    ['copies:forget', { path: '/media/T7', all: true }],
    ['copies:forget', {}],
    ['queue:list', { filter: 'everything', limit: 5 }],
    ['queue:list', { filter: 'all', limit: 5000 }],
    ['queue:list', { filter: 'all', limit: 5, sql: 'DROP TABLE files' }],
    ['queue:retry', { id: -1 }],
    ['history:set-wayline', { folder: '', waylineId: null }],
    ['waylines:list', { orderBy: 'name; drop', page: 1, pageSize: 10 }],
    ['app:get-state', 'please'],
    ['auth:login', { serverUrl: 'https://m.example.com', username: 'crew' }],
  ])(
    'refuses an invalid %s payload with a Result error, without calling the controller',
    async (channel, payload) => {
      const r = await invoke(channel, payload);
      expect(r).toMatchObject({ ok: false, error: { kind: 'invalid-input' } });
      for (const fn of Object.values(c)) expect(fn).not.toHaveBeenCalled();
    },
  );

  it('never quotes a refused payload back (it may hold a password)', async () => {
    const r = await invoke('auth:login', {
      serverUrl: 'https://m.example.com',
      username: 'crew',
      password: 'hunter2-secret',
      remember: true,
    });
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).not.toContain('hunter2-secret');
  });

  it('refuses settings that break the schema with per-field reasons', async () => {
    const r = await invoke('settings:save', {
      serverUrl: '',
      workspaceId: '',
      useLocalService: false,
      autoSyncCards: true,
      ejectAfterSync: false,
      watchedFolders: [],
      include: ['JPG'],
      filesConcurrency: 99,
      partsConcurrency: 4,
      bandwidthLimitKiBps: 0,
      aircraftDefault: 'M350',
      aircraftSerial: '',
      startAtLogin: true,
      destinations: [],
    });
    expect(r).toEqual({
      ok: false,
      error: {
        kind: 'invalid-input',
        message: 'Some settings need fixing.',
        fields: {
          filesConcurrency: 'Files at once must be a whole number from 1 to 16.',
          aircraftDefault: 'The default aircraft is a DJI key like 0-89-0 (M350), or empty.',
        },
      },
    });
    expect(c.saveSettings).not.toHaveBeenCalled();
  });

  it.each([
    ['another webContents', { sender: new FakeWebContents() }],
    ['a page that is not ours', { url: 'https://evil.example/index.html' }],
    ['another file on disk', { url: pathToFileURL('/tmp/evil/index.html').href }],
    ['an iframe inside our page', { parent: {} }],
  ])('refuses a request from %s', async (_what, from) => {
    const r = await invoke('app:get-state', undefined, from);
    expect(r).toEqual({
      ok: false,
      error: { kind: 'forbidden', message: 'This request did not come from the Drone Media Sync window.' },
    });
    expect(c.state).not.toHaveBeenCalled();
  });

  it('refuses everything once the window is gone', async () => {
    win.destroyed = true;
    fake.ipcHandlers.clear();
    registerIpc({
      handlers: createHandlers(c, electronShellActions({ window: () => null, logDir: '/x' })),
      trusted: { webContents: () => null, indexHtml: INDEX },
      log: pino({ level: 'silent' }),
    });
    expect((await invoke('app:get-state', undefined)).ok).toBe(false);
  });

  it('failures cross as data with plain words, never as exceptions or internals', async () => {
    c.syncNow.mockRejectedValueOnce(new DmsError('network', 'connect ECONNREFUSED 10.0.0.1:443'));
    expect(await invoke('sync:now', undefined)).toEqual({
      ok: false,
      error: {
        kind: 'network',
        message:
          'The server cannot be reached. Check the address and the network connection, then try again.',
      },
    });
    // A listing the server refuses is a refused request, not "this file" with a Retry button.
    c.waylines.mockRejectedValueOnce(
      new DmsError('rejected', 'The server refused GET /waylines', {
        serverMessage: 'page_size must be an integer from 1 to 100 (got "200").',
      }),
    );
    expect(await invoke('waylines:list', { orderBy: 'update_time desc', page: 1, pageSize: 10 })).toEqual({
      ok: false,
      error: {
        kind: 'rejected',
        message: 'The server refused the request: page_size must be an integer from 1 to 100 (got "200").',
      },
    });
    c.history.mockImplementationOnce(() => {
      throw new TypeError("Cannot read properties of undefined (reading 'db')");
    });
    expect(await invoke('history:list', { limit: 10 })).toEqual({
      ok: false,
      error: { kind: 'internal', message: INTERNAL_MESSAGE },
    });
    c.saveSettings.mockRejectedValueOnce(
      new UserError('invalid-input', 'Some settings need fixing.', { serverUrl: 'must start with http' }),
    );
    const r = await invoke('settings:save', {
      serverUrl: 'x',
      workspaceId: '',
      useLocalService: false,
      autoSyncCards: true,
      ejectAfterSync: false,
      watchedFolders: [],
      include: ['JPG'],
      filesConcurrency: 3,
      partsConcurrency: 4,
      bandwidthLimitKiBps: 0,
      aircraftDefault: '',
      aircraftSerial: '',
      startAtLogin: true,
      destinations: [],
    });
    expect(r).toEqual({
      ok: false,
      error: {
        kind: 'invalid-input',
        message: 'Some settings need fixing.',
        fields: { serverUrl: 'must start with http' },
      },
    });
  });
});

describe('shell and dialog channels', () => {
  it('shell:open-help opens only the allow-listed page of a topic', async () => {
    expect(await invoke('shell:open-help', { topic: 'docs' })).toEqual({ ok: true, value: null });
    expect(await invoke('shell:open-help', { topic: 'support' })).toEqual({ ok: true, value: null });
    for (const bad of [
      { topic: 'https://evil.example/' },
      { url: 'https://evil.example/' },
      { topic: 'docs', url: 'https://evil.example/' },
      { topic: '__proto__' },
      { topic: 'constructor' },
      'https://evil.example/',
    ]) {
      expect((await invoke('shell:open-help', bad)).ok).toBe(false);
    }
    expect(electron.shell.openExternal.mock.calls).toEqual([[HELP_URLS.docs], [HELP_URLS.support]]);
    expect(Object.values(HELP_URLS).every((u) => u.startsWith('https://'))).toBe(true);
  });

  it('dialog:pick-folder asks for a directory (to watch, or to copy cards to: the title says which), and a cancel is null', async () => {
    expect(await invoke('dialog:pick-folder', undefined)).toEqual({ ok: true, value: '/picked/folder' });
    expect(electron.dialog.showOpenDialog).toHaveBeenLastCalledWith(
      win,
      expect.objectContaining({
        title: 'Choose a folder to watch',
        properties: ['openDirectory', 'createDirectory'],
      }),
    );
    expect(await invoke('dialog:pick-folder', { purpose: 'destination' })).toEqual({
      ok: true,
      value: '/picked/folder',
    });
    expect(electron.dialog.showOpenDialog).toHaveBeenLastCalledWith(
      win,
      expect.objectContaining({ title: 'Choose a folder to copy each card to (on a drive of its own)' }),
    );
    expect((await invoke('dialog:pick-folder', { purpose: '/etc' })).ok).toBe(false);
    electron.dialog.showOpenDialog.mockResolvedValueOnce({ canceled: true, filePaths: [] });
    expect(await invoke('dialog:pick-folder', undefined)).toEqual({ ok: true, value: null });
  });

  it('shell:open-log-folder opens the log folder, and says so in words when it cannot', async () => {
    expect(await invoke('shell:open-log-folder', undefined)).toEqual({ ok: true, value: null });
    expect(electron.shell.openPath).toHaveBeenCalledWith('/var/log/dms');
    electron.shell.openPath.mockResolvedValueOnce('No application is associated');
    const r = await invoke('shell:open-log-folder', undefined);
    expect(r).toMatchObject({ ok: false, error: { kind: 'unavailable' } });
  });
});
