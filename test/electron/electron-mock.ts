/**
 * A stand-in for the `electron` module. Electron is mocked in these tests
 * because its binary cannot be downloaded here (and CI installs without it):
 * the shell's code runs in plain Node against these fakes, which record what
 * it asked Electron to do. Use with:
 *   vi.mock('electron', () => import('./electron-mock.js').then((m) => m.electronModule));
 */
import { EventEmitter } from 'node:events';
import type { BrowserWindowConstructorOptions, MenuItemConstructorOptions } from 'electron';
import { vi } from 'vitest';

type Listener = (...args: unknown[]) => unknown;

export class FakeWebContents extends EventEmitter {
  readonly send = vi.fn();
  windowOpenHandler: ((d: { url: string }) => { action: string }) | null = null;
  readonly mainFrame: { url: string; parent: null } = { url: '', parent: null };
  setWindowOpenHandler(fn: (d: { url: string }) => { action: string }): void {
    this.windowOpenHandler = fn;
  }
}

export class FakeBrowserWindow extends EventEmitter {
  static instances: FakeBrowserWindow[] = [];
  readonly webContents = new FakeWebContents();
  visible = false;
  destroyed = false;
  menuRemoved = false;
  loaded: string | null = null;
  constructor(readonly options: BrowserWindowConstructorOptions) {
    super();
    FakeBrowserWindow.instances.push(this);
  }
  loadFile(file: string): Promise<void> {
    this.loaded = file;
    this.webContents.mainFrame.url = new URL(`file://${file}`).href;
    setImmediate(() => this.emit('ready-to-show'));
    return Promise.resolve();
  }
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  focus(): void {}
  restore(): void {}
  isMinimized(): boolean {
    return false;
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  removeMenu(): void {
    this.menuRemoved = true;
  }
  /** What the window's close button does. */
  close(): void {
    const e = { defaultPrevented: false, preventDefault: () => (e.defaultPrevented = true) };
    this.emit('close', e);
    if (!e.defaultPrevented) this.destroyed = true;
  }
}

export class FakeTray extends EventEmitter {
  static instances: FakeTray[] = [];
  image: unknown;
  tooltip = '';
  menu: { template: MenuItemConstructorOptions[] } | null = null;
  destroyed = false;
  constructor(image: unknown) {
    super();
    this.image = image;
    FakeTray.instances.push(this);
  }
  setImage(i: unknown): void {
    this.image = i;
  }
  setToolTip(t: string): void {
    this.tooltip = t;
  }
  setContextMenu(m: { template: MenuItemConstructorOptions[] }): void {
    this.menu = m;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

export class FakeNotification extends EventEmitter {
  static shown: Array<{ title: string; body: string }> = [];
  static isSupported = () => true;
  constructor(readonly opts: { title: string; body: string }) {
    super();
  }
  show(): void {
    FakeNotification.shown.push({ title: this.opts.title, body: this.opts.body });
  }
}

/** Test-controlled values (paths, the single-instance lock, the keyring). */
export const fake = {
  paths: { logs: '/tmp/dms-logs' } as Record<string, string>,
  appPath: process.cwd(),
  lock: true,
  packaged: false,
  /** The command line's switches (app.commandLine), by name without the dashes. */
  switches: new Map<string, string>(),
  appListeners: new Map<string, Listener[]>(),
  ipcHandlers: new Map<string, Listener>(),
  safeStorage: {
    available: true,
    isEncryptionAvailable: () => fake.safeStorage.available,
    encryptString: (s: string) => Buffer.from(`enc:${Buffer.from(s).toString('base64')}`),
    decryptString: (b: Buffer) => Buffer.from(b.toString().slice(4), 'base64').toString(),
    getSelectedStorageBackend: () => 'gnome_libsecret',
  },
  reset(): void {
    FakeBrowserWindow.instances = [];
    FakeTray.instances = [];
    FakeNotification.shown = [];
    fake.appListeners.clear();
    fake.ipcHandlers.clear();
    fake.lock = true;
    fake.packaged = false;
    fake.switches.clear();
  },
};

const app = {
  get isPackaged() {
    return fake.packaged;
  },
  getPath: (name: string) => fake.paths[name] ?? `/tmp/dms-${name}`,
  getAppPath: () => fake.appPath,
  getVersion: () => '0.0.0-test',
  whenReady: () => Promise.resolve(),
  on(event: string, fn: Listener) {
    fake.appListeners.set(event, [...(fake.appListeners.get(event) ?? []), fn]);
    return app;
  },
  /** Runs the listeners of an app event the way Electron would. */
  emit(event: string, ...args: unknown[]) {
    for (const fn of fake.appListeners.get(event) ?? []) fn(...args);
  },
  quit: vi.fn(() => {
    const e = { defaultPrevented: false, preventDefault: () => (e.defaultPrevented = true) };
    app.emit('before-quit', e);
  }),
  exit: vi.fn(),
  commandLine: {
    hasSwitch: (name: string) => fake.switches.has(name),
    getSwitchValue: (name: string) => fake.switches.get(name) ?? '',
  },
  requestSingleInstanceLock: vi.fn(() => fake.lock),
  setAppUserModelId: vi.fn(),
  setLoginItemSettings: vi.fn(),
  getLoginItemSettings: vi.fn(() => ({ wasOpenedAtLogin: false })),
  dock: undefined,
};

export const electron = {
  app,
  BrowserWindow: FakeBrowserWindow,
  Tray: FakeTray,
  Notification: FakeNotification,
  Menu: { buildFromTemplate: (template: MenuItemConstructorOptions[]) => ({ template }) },
  nativeImage: {
    createFromBuffer: (buffer: Buffer, opts?: { scaleFactor?: number }) => {
      const reps = [{ scaleFactor: opts?.scaleFactor ?? 1, buffer }];
      return { reps, addRepresentation: (r: { scaleFactor: number; buffer: Buffer }) => reps.push(r) };
    },
  },
  ipcMain: {
    handle: (channel: string, fn: Listener) => {
      if (fake.ipcHandlers.has(channel)) throw new Error(`second handler for ${channel}`);
      fake.ipcHandlers.set(channel, fn);
    },
    removeHandler: (channel: string) => fake.ipcHandlers.delete(channel),
  },
  dialog: {
    showOpenDialog: vi.fn(() => Promise.resolve({ canceled: false, filePaths: ['/picked/folder'] })),
  },
  shell: { openExternal: vi.fn(() => Promise.resolve()), openPath: vi.fn(() => Promise.resolve('')) },
  safeStorage: fake.safeStorage,
  session: {
    defaultSession: {
      setPermissionRequestHandler: vi.fn(),
      setPermissionCheckHandler: vi.fn(),
      webRequest: { onHeadersReceived: vi.fn() },
    },
  },
};

/** What `import ... from 'electron'` gives (plus the test controls, for tests that reset modules). */
export const electronModule = { ...electron, default: electron, __fake: fake };
