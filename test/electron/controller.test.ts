import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { UserError } from '../../main/electron/failures.js';
import { NotificationPolicy, type Notice } from '../../main/electron/notifications.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { DJI_FILES, tempDir } from '../support/harness.js';
import { buildRtkCard } from '../support/rtk-card.js';
import { FOLDER, insertCard, MemorySecrets, recordController, until } from './helpers.js';

// The controller is Electron-free, so it runs here for real: the built-in
// local service in-process, the real queue, the real card monitor on a
// temporary mount root, real DJI files.

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/main');
const BIN = path.join(DIST, 'cli/bin.js');
const BUILT_LOCK = path.join(DIST, 'core/queue/lock.js');

async function rejection(p: Promise<unknown>): Promise<UserError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UserError);
  return err as UserError;
}

let root: string;
beforeAll(() => {
  root = tempDir('dms-controller-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function newController(name: string, config: Record<string, unknown> = {}, secrets = new MemorySecrets()) {
  const stateDir = path.join(root, name);
  fs.mkdirSync(stateDir, { recursive: true });
  if (Object.keys(config).length)
    fs.writeFileSync(path.join(stateDir, 'config.json'), JSON.stringify(config));
  const c = new AppController({
    stateDir,
    secrets,
    env: {},
    quietMs: 300,
    cardPollMs: 150,
    pushIntervalMs: 40,
  });
  return { c, secrets, stateDir };
}

// The built-in local service runs only when the user chose it (useLocalService).
describe('controller with the built-in local service', () => {
  it('detects a card, syncs it, and answers state, queue, history, waylines and the connection test', async () => {
    const mnt = path.join(root, 'mnt-local');
    fs.mkdirSync(mnt);
    const { c } = newController('local', { useLocalService: true, mountRoots: [mnt] });
    const { pushes, activity } = recordController(c);
    await c.start();
    try {
      const s0 = c.state();
      expect(s0).toMatchObject({
        engine: 'idle',
        attention: null,
        failedCount: 0,
        signedIn: true,
        cards: [],
      });
      expect(s0.serverLabel).toBe('the built-in local service');

      insertCard(path.join(mnt, 'DJI_CARD'));
      await until('4 files done', () => c.queueList('done', 100).length === DJI_FILES.length);
      await until('idle', () => c.state().engine === 'idle');

      const s1 = c.state();
      expect(s1.cards.map((x) => x.label)).toEqual(['DJI_CARD']);
      expect(s1.progress.filesDone).toBe(DJI_FILES.length);
      const items = c.queueList('all', 100);
      expect(items).toHaveLength(4);
      expect(
        items.every(
          (i) =>
            i.state === 'done' && i.outcome === 'uploaded' && i.source === 'DJI_CARD' && i.error === null,
        ),
      ).toBe(true);
      expect(items.map((i) => i.name).sort()).toEqual(DJI_FILES.map((f) => path.basename(f)).sort());
      expect(c.queueList('failed', 10)).toEqual([]);
      expect(c.queueList('active', 10)).toEqual([]);

      // The mission folder was matched to the seeded wayline of the same name.
      const [h] = c.history(10);
      expect(h).toMatchObject({ label: 'DJI_CARD', folder: FOLDER, files: 4, failed: 0 });
      expect(h!.wayline).toMatchObject({ waylineName: 'Waypoint1', how: 'exact' });

      // Waylines: the window's query in camelCase, one page back in camelCase.
      const page = await c.waylines({ orderBy: 'name asc', page: 1, pageSize: 5 });
      expect(page).toMatchObject({ page: 1, pageSize: 5, total: 30 });
      expect(page.list).toHaveLength(5);
      expect(page.list[0]).toEqual(
        expect.objectContaining({
          id: expect.any(String),
          name: expect.any(String),
          favorited: expect.any(Boolean),
          templateTypes: expect.any(Array),
        }),
      );
      const mapping = await c.waylines({ orderBy: 'name asc', page: 1, pageSize: 100, templateTypes: [1] });
      expect(mapping.list.length).toBeGreaterThan(0);
      expect(mapping.list.every((w) => w.templateTypes.includes(1))).toBe(true);

      // The user's correction wins over the name match.
      const other = page.list.find((w) => w.name !== 'Waypoint1')!;
      expect(await c.setWayline(FOLDER, other.id)).toEqual({ updated: 1 });
      expect(c.history(1)[0]!.wayline).toEqual({ waylineId: other.id, waylineName: other.name, how: 'user' });

      expect(await c.testConnection('', '')).toEqual({
        message: 'Connected: 30 waylines in this workspace.',
      });

      expect(c.pause()).toMatchObject({ engine: 'paused' });
      expect(c.resume().engine).not.toBe('paused');
      expect((await c.syncNow()).engine).not.toBe('paused');

      // Events became pushes (throttled) and plain activity.
      await sleep(150);
      const channels = new Set(pushes.map((p) => p.channel));
      expect(channels).toEqual(new Set(['push:state', 'push:progress', 'push:queue-changed']));
      expect(pushes.length).toBeLessThan(100);
      expect(activity).toContainEqual(
        expect.objectContaining({ type: 'source-added', label: 'DJI_CARD', isCard: true }),
      );
      expect(activity).toContainEqual(
        expect.objectContaining({ type: 'wayline', folder: FOLDER, waylineName: 'Waypoint1' }),
      );

      // The same activity, through the notification policy: one card notice, one summary, and
      // once the card is at rest and checked in the bucket, "safe to format".
      await until('the verdict', () => activity.some((a) => a.type === 'offload'));
      const policy = new NotificationPolicy();
      const notices: Notice[] = activity.flatMap((a) => policy.handle(a));
      expect(notices.map((n) => n.kind)).toEqual(['card', 'synced', 'safe']);
      expect(notices[2]!.body).toMatch(
        /^DJI_CARD: 4 files verified in the built-in workspace on this laptop, \/.+\/local-service — safe to format$/,
      );
      expect(notices[0]!.body).toContain('wayline “Waypoint1”');
      expect(notices[1]!.body).toMatch(/^4 files synced \(.+ uploaded\)\.$/);
    } finally {
      await c.stop();
    }
  });

  it('saving settings: plain field errors for a bad address or missing workspace; a good save is applied and kept', async () => {
    const emptyMount = path.join(root, 'mnt-empty');
    fs.mkdirSync(emptyMount);
    // Cards are switched on below: watched on an empty mount root, never this machine's /media.
    const { c, stateDir } = newController('settings', {
      useLocalService: true,
      autoSyncCards: false,
      mountRoots: [emptyMount],
    });
    await c.start();
    try {
      const base = c.settings();
      expect(base).toMatchObject({
        serverUrl: '',
        useLocalService: true,
        autoSyncCards: false,
        filesConcurrency: 3,
        signedIn: true,
      });
      const { signedIn: _s, ...view } = base;

      const bad = await rejection(
        c.saveSettings({ ...view, serverUrl: 'media.example.com', workspaceId: 'ws' }),
      );
      expect(bad.kind).toBe('invalid-input');
      expect(bad.fields?.serverUrl).toMatch(/must start with http:\/\/ or https:\/\//);

      const noWs = await rejection(
        c.saveSettings({ ...view, serverUrl: 'https://media.example.com', workspaceId: ' ' }),
      );
      expect(noWs.fields?.workspaceId).toMatch(/workspace is required when a server is set/);

      const missing = await rejection(c.saveSettings({ ...view, watchedFolders: [path.join(root, 'nope')] }));
      expect(missing.fields?.watchedFolders).toMatch(/does not exist/);

      const folder = path.join(root, 'watched');
      fs.mkdirSync(folder);
      const saved = await c.saveSettings({
        ...view,
        filesConcurrency: 5,
        include: ['jpg', 'MP4'],
        watchedFolders: [folder],
      });
      expect(saved).toMatchObject({
        filesConcurrency: 5,
        include: ['JPG', 'MP4'],
        watchedFolders: [folder],
        signedIn: true,
      });
      const file = JSON.parse(fs.readFileSync(path.join(stateDir, 'config.json'), 'utf8'));
      expect(file).toMatchObject({
        concurrency: { files: 5, parts: 4 },
        watchedFolders: [folder],
        autoSyncCards: false,
      });
      expect(c.state().engine).not.toBe('auth-required');

      // A pause survives a change that rebuilds the agent (cards switched on), until resumed.
      c.pause();
      await c.saveSettings({ ...view, filesConcurrency: 5, watchedFolders: [folder], autoSyncCards: true });
      expect(c.state()).toMatchObject({ engine: 'paused' });
      expect(c.resume().engine).not.toBe('paused');
    } finally {
      await c.stop();
    }
  });

  it('a broken config.json stops nothing silently: no agent on defaults, a plain sentence, fixed by saving', async () => {
    const { c, stateDir } = newController('broken');
    fs.writeFileSync(path.join(stateDir, 'config.json'), '{ "server": ');
    await c.start();
    try {
      const s = c.state();
      expect(s.attention).toMatch(/not valid JSON.*Saving the settings in this window replaces it/);
      expect(() => c.pause()).toThrow(UserError);
      const { signedIn: _s, ...view } = c.settings();
      await c.saveSettings({ ...view, useLocalService: true, autoSyncCards: false });
      expect(c.state()).toMatchObject({ attention: null, signedIn: true });
    } finally {
      await c.stop();
    }
  });
});

describe('controller with a workspace server', () => {
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ dataDir: path.join(root, 'server'), logger: false });
    await svc.admin.createUser('crew', 'correct-horse-battery');
  });
  afterAll(() => svc.close());

  it('signs in (token to the secret store only), syncs, asks to sign in again when the token is revoked, signs out', async () => {
    const { c, secrets, stateDir } = newController('remote', { autoSyncCards: false });
    const { activity } = recordController(c);
    await c.start();
    try {
      const wrong = await rejection(c.login(svc.baseUrl, 'crew', 'not-the-password'));
      expect(wrong).toMatchObject({ kind: 'auth' });
      expect(wrong.message).toMatch(/wrong username or password/);
      const badUrl = await rejection(c.login('ftp://x', 'crew', 'pw'));
      expect(badUrl.fields?.serverUrl).toBeDefined();
      const unreachable = await rejection(c.login('http://127.0.0.1:9', 'crew', 'pw'));
      expect(unreachable.message).toBe(
        'http://127.0.0.1:9 cannot be reached. Check the address and the network connection.',
      );

      expect(await c.login(`${svc.baseUrl}/`, 'crew', 'correct-horse-battery')).toEqual({
        workspaceId: svc.workspaceId,
      });
      const token = secrets.value!.token;
      expect(secrets.value).toEqual({
        server: svc.baseUrl,
        workspaceId: svc.workspaceId,
        token,
        user: 'crew',
      });
      expect(fs.readFileSync(path.join(stateDir, 'config.json'), 'utf8')).not.toContain(token);
      expect(c.state()).toMatchObject({ serverLabel: svc.baseUrl, signedIn: true, attention: null });
      // Who and where, for the window: the user name kept with the sign-in (never the token).
      const account = { kind: 'server', server: svc.baseUrl, workspaceId: svc.workspaceId, user: 'crew' };
      expect(c.settings()).toMatchObject({
        serverUrl: svc.baseUrl,
        workspaceId: svc.workspaceId,
        signedIn: true,
        account,
      });
      expect(c.state().account).toEqual(account);

      expect(await c.testConnection(svc.baseUrl, '')).toEqual({
        message: 'Connected: 30 waylines in this workspace.',
      });
      expect((await rejection(c.testConnection('http://127.0.0.1:9', 'ws'))).message).toMatch(
        /^Not signed in to/,
      );
      expect((await rejection(c.testConnection(svc.baseUrl, 'no-such-workspace'))).message).toMatch(
        /^The server refused|does not accept/,
      );

      // A watched folder syncs to the server.
      const folder = insertCard(path.join(root, 'remote-folder'), FOLDER, DJI_FILES.slice(0, 2));
      const { signedIn: _s, ...view } = c.settings();
      await c.saveSettings({ ...view, watchedFolders: [folder] });
      await until(
        '2 records on the server',
        async () => (await svc.admin.mediaRecords(svc.workspaceId)).length === 2,
      );

      // The token is revoked: the engine stops and asks for a sign-in once.
      await svc.admin.revokeToken(token);
      insertCard(folder, FOLDER, DJI_FILES.slice(2, 3));
      await until('auth-required', () => c.state().engine === 'auth-required');
      expect(c.state().attention).toMatch(/Sign in again/);
      expect(activity.filter((a) => a.type === 'state' && a.state === 'auth-required')).toHaveLength(1);

      // A pasted token: refused when wrong, used when right; the waiting file then goes up.
      const refused = await rejection(c.setToken(svc.baseUrl, svc.workspaceId, 'not-a-real-token'));
      expect(refused.message).toBe('The server does not accept this token.');
      await c.setToken(svc.baseUrl, svc.workspaceId, await svc.admin.createToken());
      expect(c.state().signedIn).toBe(true);
      await until(
        '3 records on the server',
        async () => (await svc.admin.mediaRecords(svc.workspaceId)).length === 3,
      );

      expect(await c.signOut()).toEqual({ signedIn: false });
      expect(secrets.value).toBeNull();
      const out = c.state();
      expect(out).toMatchObject({ engine: 'auth-required', signedIn: false });
      expect(out.attention).toBe(`Sign in to ${svc.baseUrl} to start uploading. Cards are queued meanwhile.`);
      // Signed out: the server stays chosen, nobody is signed in to it.
      expect(out.account).toEqual({
        kind: 'server',
        server: svc.baseUrl,
        workspaceId: svc.workspaceId,
        user: null,
      });
      await expect(c.waylines({ orderBy: 'name asc', page: 1, pageSize: 5 })).rejects.toThrow(
        'Sign in (Settings, Sign in) to see the waylines of your workspace.',
      );
    } finally {
      await c.stop();
    }
  });
});

describe('before any sign-in, and beside the command line', () => {
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ dataDir: path.join(root, 'server-2'), logger: false });
    await svc.admin.createUser('crew', 'correct-horse-battery');
  });
  afterAll(() => svc.close());

  it('a card inserted before sign-in is counted and waits ("Sign in to upload"); nothing goes to a local bucket; signing in sends it to the server', async () => {
    const mnt = path.join(root, 'mnt-fresh');
    fs.mkdirSync(mnt);
    const { c, stateDir } = newController('fresh', { mountRoots: [mnt] });
    await c.start();
    try {
      insertCard(path.join(mnt, 'DJI_CARD'));
      await until('the card counted', () => (c.state().attention ?? '').includes('4 files on DJI_CARD'));
      // Nothing recorded before a sign-in: the lists are empty (the window says why), never an error.
      expect(c.queueList('all', 10)).toEqual([]);
      expect(c.history(10)).toEqual([]);
      expect(c.flights()).toEqual([]);
      await expect(c.waylines({ orderBy: 'name asc', page: 1, pageSize: 5 })).rejects.toThrow(
        'Sign in (Settings, Sign in) to see the waylines of your workspace.',
      );
      const s = c.state();
      expect(s).toMatchObject({
        engine: 'auth-required',
        signedIn: false,
        cards: [expect.objectContaining({ label: 'DJI_CARD' })],
      });
      expect(s.attention).toBe('4 files on DJI_CARD wait. Nothing is uploaded until you sign in.');
      expect(s.cards).toEqual([
        expect.objectContaining({ label: 'DJI_CARD', waitingForSignIn: 4, headline: null }),
      ]);
      expect(s.account).toEqual({ kind: 'none', server: null, workspaceId: null, user: null });
      // No local service was started, so no local bucket exists on the laptop.
      expect(fs.existsSync(path.join(stateDir, 'local-service'))).toBe(false);

      await c.login(svc.baseUrl, 'crew', 'correct-horse-battery');
      await until(
        '4 records on the server',
        async () => (await svc.admin.mediaRecords(svc.workspaceId)).length === DJI_FILES.length,
      );
      // The server records a file before its answer reaches the engine, which then marks it done.
      await until('4 done in the queue', () => c.queueList('done', 10).length === DJI_FILES.length);
      expect(c.queueList('done', 10)).toHaveLength(DJI_FILES.length);
      expect(fs.existsSync(path.join(stateDir, 'local-service'))).toBe(false);
    } finally {
      await c.stop();
    }
  });

  it('the app and the command line never drain one queue at once: each waits for the other', async () => {
    const folder = insertCard(path.join(root, 'shared-folder'), FOLDER, DJI_FILES.slice(0, 1));
    const { c, stateDir } = newController('shared', {
      useLocalService: true,
      autoSyncCards: false,
      watchedFolders: [folder],
    });
    // The app holds the queue: the real CLI is refused with a plain sentence.
    await c.start();
    const cli = spawnSync(process.execPath, [BIN, 'sync', folder, '--state', stateDir], { encoding: 'utf8' });
    expect(cli.status).toBe(2);
    expect(cli.stderr).toMatch(/Another Drone Media Sync \(process \d+\) is already syncing with this queue/);
    await c.stop();

    // A CLI-like agent (another process) holds it: the app says so and takes over once it is gone.
    const holder = spawn(process.execPath, [
      '-e',
      `import(${JSON.stringify(BUILT_LOCK)}).then((m) => { m.acquireAgentLock(${JSON.stringify(stateDir)}); console.log('held'); setInterval(() => {}, 1000); })`,
    ]);
    try {
      await new Promise<void>((resolve) => holder.stdout.on('data', () => resolve()));
      const app = new AppController({
        stateDir,
        secrets: new MemorySecrets(),
        env: {},
        quietMs: 300,
        pushIntervalMs: 40,
        lockRetryMs: 200,
      });
      await app.start();
      try {
        expect(app.state().attention).toMatch(
          /is already syncing with this queue.*takes over as soon as it has finished/,
        );
        expect(() => app.pause()).toThrow(UserError);
        holder.kill('SIGKILL');
        await until('the app running', () => app.state().attention === null && app.state().signedIn);
      } finally {
        await app.stop();
      }
    } finally {
      holder.kill('SIGKILL');
    }
  });
});

describe('verified offload in the app', () => {
  it('a card at rest gets its verdict (window, notification), its flights and map, and an accepted flight makes it safe', async () => {
    const mnt = path.join(root, 'mnt-offload');
    fs.mkdirSync(mnt);
    // A base-map source on loopback: the only host main asks for tiles.
    const tilesAsked: string[] = [];
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const tiles = http.createServer((req, res) => {
      tilesAsked.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    });
    await new Promise<void>((r) => tiles.listen(0, '127.0.0.1', r));
    const port = (tiles.address() as AddressInfo).port;
    const { c, stateDir } = newController('offload', {
      useLocalService: true,
      mountRoots: [mnt],
      mapTiles: { url: `http://127.0.0.1:${port}/{z}/{x}/{y}.png`, attribution: 'Test tiles', maxZoom: 18 },
    });
    const { activity } = recordController(c);
    await c.start();
    try {
      buildRtkCard({
        root: path.join(mnt, 'M3E_CARD'),
        mission: 'Quarry',
        exposures: 6,
        missing: [4],
        float: [2],
      });
      await until('the verdict', () => c.state().cards[0]?.workspace?.final === true);
      const v = c.state().cards[0]!.workspace!;
      expect(v.safe).toBe(false);
      expect(v.message).toBe('M3E_CARD: not safe to format yet — 1 flight incomplete');
      // No local destination: no local verdict; the card's line is the workspace's.
      expect(c.state().cards[0]).toMatchObject({
        local: null,
        headline: { safe: false, message: v.message },
        stopped: [],
      });
      const notices = activity.flatMap((a) => new NotificationPolicy().handle(a));
      expect(notices).toContainEqual({
        kind: 'problem',
        title: 'M3E_CARD: not safe to format yet',
        body: expect.stringMatching(/incomplete: 1 photo missing/),
      });

      const [flight] = c.flights();
      expect(flight).toMatchObject({
        cardLabel: 'M3E_CARD',
        missingIndexes: [4],
        incomplete: true,
        accepted: false,
      });
      expect(flight!.rtkCounts).toMatchObject({ fixed: 5, float: 1 });
      const view = c.flight(flight!.cardId, flight!.folder);
      expect(view.points.map((p) => p.state).sort()).toEqual([
        'done',
        'done',
        'done',
        'done',
        'missing',
        'rtk-float',
      ]);
      expect(view.tiles).toEqual({ attribution: 'Test tiles', maxZoom: 18 });
      const tile = await c.mapTile(3, 4, 2);
      expect(tile).toBe(`data:image/png;base64,${png.toString('base64')}`);
      expect(await c.mapTile(3, 4, 2)).toBe(tile); // from the cache
      expect(tilesAsked).toEqual(['/3/4/2.png']);
      await expect(c.mapTile(19, 0, 0)).rejects.toThrow(/zoom 18 at most/);

      // Accepted as it is: the verdict is made again at once, and says safe.
      expect(c.acceptFlight(flight!.cardId, flight!.folder)).toMatchObject({ accepted: true });
      await until('safe', () => c.state().cards[0]?.workspace?.safe === true, 15_000);
      expect(c.state().cards[0]!.headline!.message).toMatch(
        /^M3E_CARD: 9 files verified in the built-in workspace on this laptop, \/.+\/local-service — safe to format$/,
      );
      const manifests = fs.readdirSync(path.join(stateDir, 'manifests'));
      expect(manifests).toHaveLength(1);
      expect(
        fs
          .readdirSync(path.join(stateDir, 'manifests', manifests[0]!, 'ascmhl'))
          .filter((f) => f.endsWith('.mhl')),
      ).toHaveLength(2);
    } finally {
      await c.stop();
      tiles.close();
    }
  });
});
