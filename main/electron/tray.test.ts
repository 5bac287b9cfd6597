import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppStateView, ProgressView } from '../shared/ipc.js';

// Electron is mocked: its binary cannot be downloaded here (see electron-mock.ts).
vi.mock('electron', () => import('../../test/electron/electron-mock.js').then((m) => m.electronModule));
const { fake, FakeTray } = await import('../../test/electron/electron-mock.js');
const { AppTray, formatEta, trayMenuTemplate, trayView } = await import('./tray.js');

const GB = 1024 ** 3;
const progress = (p: Partial<ProgressView> = {}): ProgressView => ({
  filesTotal: 0,
  filesDone: 0,
  filesFailed: 0,
  bytesTotal: 0,
  bytesDone: 0,
  bytesSent: 0,
  rate: 0,
  etaSeconds: null,
  currentSource: null,
  ...p,
});
const state = (s: Partial<AppStateView> = {}): AppStateView => ({
  engine: 'idle',
  attention: null,
  halt: null,
  failedCount: 0,
  progress: progress(),
  waitingForCard: 0,
  serverLabel: 'the built-in local service',
  signedIn: true,
  account: { kind: 'local', server: null, workspaceId: null, user: null },
  hasFiles: true,
  destinations: [],
  cards: [],
  ...s,
});

const syncing = state({
  engine: 'syncing',
  progress: progress({
    filesTotal: 212,
    filesDone: 36,
    bytesTotal: 2 * GB,
    bytesDone: 0.8 * GB,
    etaSeconds: 240,
  }),
});

describe('trayView', () => {
  it('idle: green, all synced', () => {
    expect(trayView(state())).toEqual({
      icon: 'idle',
      tooltip: 'Drone Media Sync: all synced',
      activityLine: 'All files are synced',
    });
  });

  it('syncing: blue, the files left (never a file number beside the done count), percentage in the tooltip', () => {
    const v = trayView(syncing);
    expect(v.icon).toBe('syncing');
    expect(v.activityLine).toBe('Uploading 176 files (1.2 GB left, ~4 min)');
    expect(v.tooltip).toBe('Drone Media Sync: uploading, 40%');
  });

  it('syncing without totals yet, and without an estimate', () => {
    expect(trayView(state({ engine: 'syncing' })).activityLine).toBe('Syncing…');
    const noEta = trayView(
      state({ engine: 'syncing', progress: progress({ filesTotal: 3, bytesTotal: 3000 }) }),
    );
    expect(noEta.activityLine).toBe('Uploading 3 files (2.9 KB left)');
  });

  it('syncing: a card whose copies are verified is said to be locally safe while the upload goes on', () => {
    const local = {
      safe: true,
      message: 'M3E_CARD: 1,214 files copied and verified on SSD and T7_BACKUP — safe to format',
      reasons: [],
      files: 1214,
      verified: 1214,
      destinations: [
        { label: 'SSD', verified: 1214 },
        { label: 'T7_BACKUP', verified: 1214 },
      ],
    };
    const workspace = {
      safe: false,
      message: 'M3E_CARD: 3.1 GB of 58 GB in the workspace — the upload goes on',
      reasons: [],
      bytesTotal: 58e9,
      bytesThere: 3.1e9,
      amount: '3.1 GB of 58 GB',
      final: false,
    };
    const card = {
      id: 'c',
      label: 'M3E_CARD',
      root: '/media/M3E_CARD',
      waitingForSignIn: null,
      headline: { safe: true, message: local.message },
      local,
      workspace,
      stopped: [],
      created: [],
    };
    expect(trayView({ ...syncing, cards: [card] }).activityLine).toBe(
      'M3E_CARD is locally safe; uploading 176 files (1.2 GB left, ~4 min)',
    );
    // Not yet verified everywhere: the upload line alone.
    expect(
      trayView({ ...syncing, cards: [{ ...card, local: { ...local, safe: false }, headline: null }] })
        .activityLine,
    ).toBe('Uploading 176 files (1.2 GB left, ~4 min)');
  });

  it('paused: grey, with what is waiting', () => {
    const v = trayView(state({ engine: 'paused', progress: progress({ filesTotal: 212, filesDone: 37 }) }));
    expect(v).toEqual({
      icon: 'paused',
      tooltip: 'Drone Media Sync: Paused: 175 files waiting',
      activityLine: 'Paused: 175 files waiting',
    });
  });

  it('offline: orange, retrying by itself', () => {
    const v = trayView(state({ engine: 'offline', progress: progress({ filesTotal: 10, filesDone: 9 }) }));
    expect(v.icon).toBe('offline');
    expect(v.activityLine).toBe('Server unreachable, retrying by itself (1 file waiting)');
  });

  it("an idle tray says each inserted card's verdict: safe to format, or needs a look", () => {
    const card = (safe: boolean, message: string) => ({
      id: 'c',
      label: 'M30T_CARD',
      root: '/media/x',
      waitingForSignIn: null,
      headline: { safe, message },
      local: null,
      workspace: null,
      stopped: [],
      created: [],
    });
    const safe = trayView(
      state({ cards: [card(true, 'M30T_CARD: 212 files verified in workspace ws-1 — safe to format')] }),
    );
    expect(safe).toMatchObject({
      icon: 'idle',
      activityLine: 'M30T_CARD: 212 files verified in workspace ws-1 — safe to format',
    });
    const unsafe = trayView(
      state({ cards: [card(false, 'M30T_CARD: not safe to format yet — 1 flight incomplete')] }),
    );
    expect(unsafe).toMatchObject({
      icon: 'attention',
      activityLine: 'M30T_CARD: not safe to format yet — 1 flight incomplete',
    });
  });

  it("says a card's advisory line (issue 32) in the tooltip and the menu, never instead of its verdict", () => {
    const advisory =
      'Flight 2 of 4: 38 of 212 photos look unusable (lens cap?), first at 10:42:13 — look before you leave';
    const message = 'M30T_CARD: 212 files verified in workspace ws-1 — safe to format';
    const card = {
      id: 'c',
      label: 'M30T_CARD',
      root: '/media/x',
      waitingForSignIn: null,
      headline: { safe: true, message },
      local: null,
      workspace: null,
      stopped: [],
      created: [],
      advisory,
    };
    const s = state({ cards: [card] });
    const v = trayView(s);
    expect(v).toEqual({
      icon: 'idle',
      tooltip: `Drone Media Sync: ${message}\nM30T_CARD: ${advisory}`,
      activityLine: message,
      advisory: `M30T_CARD: ${advisory}`,
    });
    const items = trayMenuTemplate(v, s, {
      open: vi.fn(),
      pause: vi.fn(),
      resume: vi.fn(),
      syncNow: vi.fn(),
      openLogs: vi.fn(),
      quit: vi.fn(),
    });
    expect(items.slice(0, 2)).toEqual([
      { id: 'activity', label: message, enabled: false },
      { id: 'advisory', label: `M30T_CARD: ${advisory}`, enabled: false },
    ]);
    // While uploading, too: the progress stays the activity line.
    const up = trayView({ ...syncing, cards: [card] });
    expect(up.icon).toBe('syncing');
    expect(up.advisory).toBe(`M30T_CARD: ${advisory}`);
    // Two cards with one: "and 1 more card".
    expect(trayView(state({ cards: [card, { ...card, id: 'd', label: 'M3E' }] })).advisory).toBe(
      `M30T_CARD: ${advisory} (and 1 more card)`,
    );
    // None: no line, no menu item.
    expect(trayView(state({ cards: [{ ...card, advisory: null }] })).advisory).toBeUndefined();
  });

  it('a halt shows its reason, and the menu offers Resume', () => {
    const message =
      'Disk full: the disk holding /x is full. Free space on it, then press Resume; nothing is lost.';
    const s = state({ engine: 'halted', attention: message, halt: { reason: 'disk-full', message } });
    const v = trayView(s);
    expect(v).toMatchObject({ icon: 'attention', activityLine: 'Disk full: free space, then Resume' });
    const ids = trayMenuTemplate(v, s, {
      open: () => {},
      pause: () => {},
      resume: () => {},
      syncNow: () => {},
      quit: () => {},
    } as never).map((m) => m.id);
    expect(ids).toContain('resume');
    expect(ids).not.toContain('pause');
  });

  it('needs attention: red for a sign-in, failed files once idle, or an engine that could not start', () => {
    expect(
      trayView(state({ engine: 'auth-required', signedIn: false, attention: 'Sign in to x' })),
    ).toMatchObject({
      icon: 'attention',
      activityLine: 'Sign in needed',
    });
    const failed = trayView(state({ failedCount: 3, attention: '3 files could not be uploaded.' }));
    expect(failed).toMatchObject({ icon: 'attention', activityLine: '3 files need attention' });
    const broken = trayView(state({ engine: 'offline', attention: 'The sync engine could not start: boom' }));
    expect(broken).toMatchObject({
      icon: 'attention',
      activityLine: 'The sync engine could not start: boom',
    });
  });

  it('a running upload keeps its progress icon even with old failures', () => {
    expect(trayView({ ...syncing, failedCount: 2, attention: '2 files could not be uploaded.' }).icon).toBe(
      'syncing',
    );
  });

  it('formats estimates for people', () => {
    expect(formatEta(null)).toBeNull();
    expect(formatEta(20)).toBe('less than a minute');
    expect(formatEta(240)).toBe('~4 min');
    expect(formatEta(4800)).toBe('~1 h 20 min');
    expect(formatEta(7200)).toBe('~2 h');
  });
});

describe('tray menu', () => {
  const actions = () => ({
    open: vi.fn(),
    pause: vi.fn(),
    resume: vi.fn(),
    syncNow: vi.fn(),
    openLogs: vi.fn(),
    quit: vi.fn(),
  });

  it('has the activity line (disabled), Open, Pause, Sync now, Open log folder, Quit — each wired', () => {
    const a = actions();
    const items = trayMenuTemplate(trayView(syncing), syncing, a);
    expect(items.filter((i) => i.type !== 'separator').map((i) => i.label)).toEqual([
      'Uploading 176 files (1.2 GB left, ~4 min)',
      'Open Drone Media Sync',
      'Pause syncing',
      'Sync now',
      'Open log folder',
      'Quit Drone Media Sync',
    ]);
    expect(items[0]).toMatchObject({ id: 'activity', enabled: false });
    const click = (id: string) => (items.find((i) => i.id === id)!.click as () => void)();
    click('open');
    click('pause');
    click('sync-now');
    click('logs');
    click('quit');
    expect(a.open).toHaveBeenCalledOnce();
    expect(a.pause).toHaveBeenCalledOnce();
    expect(a.syncNow).toHaveBeenCalledOnce();
    expect(a.openLogs).toHaveBeenCalledOnce();
    expect(a.quit).toHaveBeenCalledOnce();
    expect(a.resume).not.toHaveBeenCalled();
  });

  it('offers Resume instead of Pause while paused', () => {
    const a = actions();
    const paused = state({ engine: 'paused' });
    const items = trayMenuTemplate(trayView(paused), paused, a);
    expect(items.some((i) => i.id === 'pause')).toBe(false);
    (items.find((i) => i.id === 'resume')!.click as () => void)();
    expect(a.resume).toHaveBeenCalledOnce();
  });
});

describe('AppTray (applies the view to an Electron Tray)', () => {
  beforeEach(() => fake.reset());

  it('sets icon, tooltip and menu, rebuilding the menu only when its text changes; a click opens the window', () => {
    const a = {
      open: vi.fn(),
      pause: vi.fn(),
      resume: vi.fn(),
      syncNow: vi.fn(),
      openLogs: vi.fn(),
      quit: vi.fn(),
    };
    const tray = new AppTray(a, 'win32');
    const t = FakeTray.instances[0]!;
    tray.update(syncing);
    expect(t.tooltip).toBe('Drone Media Sync: uploading, 40%');
    const firstMenu = t.menu;
    expect(firstMenu!.template[0]!.label).toBe('Uploading 176 files (1.2 GB left, ~4 min)');
    // Windows/macOS images carry a 2x representation for HiDPI.
    expect((t.image as { reps: unknown[] }).reps).toHaveLength(2);
    const syncingImage = t.image;
    tray.update(syncing);
    expect(t.menu).toBe(firstMenu);
    tray.update(state());
    expect(t.image).not.toBe(syncingImage);
    expect(t.menu!.template[0]!.label).toBe('All files are synced');
    t.emit('click');
    expect(a.open).toHaveBeenCalledOnce();
    tray.destroy();
    expect(t.destroyed).toBe(true);
  });
});
