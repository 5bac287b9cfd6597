import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAppLogger } from '../../main/electron/app-log.js';
import { AppController } from '../../main/electron/controller.js';
import { startService, type RunningService } from '../../main/service/index.js';
import type { Channel, Result } from '../../main/shared/ipc.js';
import { DJI_FILES, tempDir } from '../support/harness.js';
import { insertCard, MemorySecrets, recordController, until } from './helpers.js';

// Electron is mocked: its binary cannot be downloaded here (see electron-mock.ts).
// Everything else is real: controller, service, queue, IPC dispatch, log file.
vi.mock('electron', () => import('./electron-mock.js').then((m) => m.electronModule));
const { fake, FakeBrowserWindow } = await import('./electron-mock.js');
const { createHandlers, electronShellActions, registerIpc } = await import('../../main/electron/ipc.js');

const INDEX = path.resolve('/opt/dms/renderer/dist/index.html');
const PASSWORD = 'correct-horse-battery-staple';

let root: string;
let svc: RunningService;
beforeAll(async () => {
  root = tempDir('dms-nosecret-');
  svc = await startService({ dataDir: path.join(root, 'server'), logger: false });
  await svc.admin.createUser('crew', PASSWORD);
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function harness(name: string, config: Record<string, unknown>) {
  fake.reset();
  const stateDir = path.join(root, name);
  fs.mkdirSync(stateDir, { recursive: true });
  fs.writeFileSync(path.join(stateDir, 'config.json'), JSON.stringify(config));
  const logDir = path.join(root, `${name}-logs`);
  const { logger, flush } = await createAppLogger(logDir, { level: 'debug' });
  const secrets = new MemorySecrets();
  const c = new AppController({
    stateDir,
    secrets,
    logger,
    env: {},
    quietMs: 300,
    cardPollMs: 150,
    pushIntervalMs: 20,
  });
  const rec = recordController(c);
  const win = new FakeBrowserWindow({});
  registerIpc({
    handlers: createHandlers(c, electronShellActions({ window: () => win as never, logDir })),
    trusted: { webContents: () => win.webContents as never, indexHtml: INDEX },
    log: logger,
  });
  const answers: Array<Result<unknown>> = [];
  const invoke = async (channel: Channel, payload: unknown) => {
    const event = { sender: win.webContents, senderFrame: { url: pathToFileURL(INDEX).href, parent: null } };
    const r = (await fake.ipcHandlers.get(channel)!(event, payload)) as Result<unknown>;
    answers.push(r);
    return r;
  };
  const logText = () => {
    flush();
    return fs
      .readdirSync(logDir)
      .map((f) => fs.readFileSync(path.join(logDir, f), 'utf8'))
      .join('');
  };
  return { c, secrets, rec, invoke, answers, logText };
}

/** A valid request for every channel: a new channel in the contract fails to compile here until added. */
function requests(serverUrl: string, workspaceId: string, folder: string): Record<Channel, unknown> {
  return {
    'app:get-state': undefined,
    'queue:list': { filter: 'all', limit: 100 },
    'queue:retry': { all: true },
    'sync:pause': undefined,
    'sync:resume': undefined,
    'sync:now': undefined,
    'history:list': { limit: 50 },
    'history:set-wayline': { folder: 'DJI_202209021517_001_Waypoint1', waylineId: null },
    'waylines:list': { orderBy: 'name asc', page: 1, pageSize: 10 },
    'settings:get': undefined,
    'settings:save': {
      serverUrl,
      workspaceId,
      useLocalService: serverUrl === '',
      autoSyncCards: false,
      ejectAfterSync: false,
      watchedFolders: [folder],
      include: ['JPG'],
      filesConcurrency: 2,
      partsConcurrency: 2,
      bandwidthLimitKiBps: 0,
      aircraftDefault: '',
      aircraftSerial: '',
      startAtLogin: false,
      destinations: [],
    },
    'copies:forget': { path: folder },
    'targets:list': undefined,
    'targets:forget': { key: 'http://127.0.0.1:1#ws-never' },
    'link:answer': { answer: 'not-now' },
    'link:pin': { pin: 'none' },
    'auth:login': { serverUrl: svc.baseUrl, username: 'crew', password: PASSWORD },
    'auth:set-token': { serverUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: 'not-a-valid-token' },
    'auth:test-connection': { serverUrl, workspaceId },
    'flights:list': {},
    'flights:get': { cardId: 'card-1', folder: 'DCIM/DJI_202209021517_001_Waypoint1' },
    'flights:accept': { cardId: 'card-1', folder: 'DCIM/DJI_202209021517_001_Waypoint1' },
    'map:tile': { z: 3, x: 4, y: 2 },
    'dialog:pick-folder': undefined,
    'shell:open-log-folder': undefined,
    'shell:open-help': { topic: 'docs' },
    'auth:sign-out': undefined,
  };
}

describe('the renderer never receives a secret', () => {
  it('server mode: after a real sign-in and sync, no answer, push or log line holds the token or password', async () => {
    const h = await harness('server', { autoSyncCards: false });
    await h.c.start();
    try {
      const login = await h.invoke('auth:login', {
        serverUrl: svc.baseUrl,
        username: 'crew',
        password: PASSWORD,
      });
      expect(login).toEqual({ ok: true, value: { workspaceId: svc.workspaceId } });
      const token = h.secrets.value!.token;
      expect(token.length).toBeGreaterThan(10);

      const folder = insertCard(path.join(root, 'server-card'), undefined, DJI_FILES.slice(0, 2));
      const all = requests(svc.baseUrl, svc.workspaceId, folder);
      await h.invoke('settings:save', all['settings:save']);
      await until('synced', async () => (await svc.admin.mediaRecords(svc.workspaceId)).length === 2);
      for (const [channel, payload] of Object.entries(all) as Array<[Channel, unknown]>) {
        if (channel !== 'auth:login') await h.invoke(channel, payload);
      }
      // Every channel answered as data (some fail by design: a wrong pasted token).
      expect(h.answers.length).toBe(Object.keys(all).length + 1); // settings:save twice
      expect(h.answers.filter((a) => a.ok).length).toBeGreaterThanOrEqual(16);
      await new Promise((r) => setTimeout(r, 100));

      const seen = JSON.stringify({ answers: h.answers, pushes: h.rec.pushes, activity: h.rec.activity });
      expect(seen).not.toContain(token);
      expect(seen).not.toContain(PASSWORD);
      const log = h.logText();
      expect(log).toContain('signed in'); // the log is really written...
      expect(log).not.toContain(token); // ...without the token
      expect(log).not.toContain(PASSWORD);
      // Settings say only whether a sign-in exists.
      const settings = h.answers.find(
        (a) => a.ok && typeof a.value === 'object' && a.value !== null && 'signedIn' in a.value,
      );
      expect(settings).toBeDefined();
    } finally {
      await h.c.stop();
    }
  });

  it("local mode: the built-in service's development token never reaches the window", async () => {
    const h = await harness('local', { useLocalService: true, autoSyncCards: false });
    await h.c.start();
    let seen: string;
    let log: string;
    try {
      const folder = insertCard(path.join(root, 'local-card'), undefined, DJI_FILES.slice(0, 1));
      const all = requests('', '', folder);
      for (const [channel, payload] of Object.entries(all) as Array<[Channel, unknown]>) {
        if (channel !== 'auth:login' && channel !== 'auth:set-token') await h.invoke(channel, payload);
      }
      await until('synced', () => h.c.queueList('done', 10).length === 1);
      await h.invoke('app:get-state', undefined);
      seen = JSON.stringify({ answers: h.answers, pushes: h.rec.pushes, activity: h.rec.activity });
      log = h.logText();
    } finally {
      await h.c.stop();
    }
    // The development token is stable across restarts of the service on the same data dir.
    const local = await startService({ dataDir: path.join(root, 'local', 'local-service'), logger: false });
    const devToken = local.token;
    await local.close();
    expect(devToken.length).toBeGreaterThan(10);
    expect(seen).not.toContain(devToken);
    expect(log).not.toContain(devToken);
  });

  it('the log file (rotating, in the log folder) redacts secrets wherever they sit in a logged object', async () => {
    const dir = path.join(root, 'redaction-logs');
    const { logger, flush } = await createAppLogger(dir);
    logger.info(
      {
        token: 'S1-token',
        headers: { 'x-auth-token': 'S2-header' },
        sts: { credentials: { accessKeySecret: 'S3-key' } },
      },
      'probe',
    );
    flush();
    const files = fs.readdirSync(dir);
    expect(files).toEqual(['drone-media-sync.1.log']);
    const text = fs.readFileSync(path.join(dir, files[0]!), 'utf8');
    expect(text).toContain('"msg":"probe"');
    expect(text).not.toMatch(/S1-token|S2-header|S3-key/);
  });

  it('a log folder that cannot be written does not stop the app: it logs to stderr', async () => {
    const blocker = path.join(root, 'not-a-folder');
    fs.writeFileSync(blocker, 'a file where the log folder should be');
    const { logger, flush } = await createAppLogger(path.join(blocker, 'logs'));
    expect(typeof logger.info).toBe('function');
    flush();
  });
});
