import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent } from '../../main/core/agent.js';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { FIXTURES, tempDir, until } from '../support/harness.js';

// Watched folders with the real watcher, the real service and bucket, and a
// real queue file shared by two agent "runs" (stop, change files, start).
let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-folders-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function copyOld(src: string, dest: string): void {
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.copyFileSync(src, dest);
  const t = Date.now() / 1000 - 120;
  fs.utimesSync(dest, t, t);
}

it('finds what changed while stopped, re-hashes nothing, matches waylines and keeps history', async () => {
  // the default workspace: it holds the seeded demo waylines
  const ws = svc.workspaceId;
  const token = svc.token;
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: ws, token });
  const root = path.join(dir, 'watched');
  const flight = path.join(root, 'DCIM', 'DJI_202209021517_001_Solar_Farm_North');
  copyOld(path.join(FIXTURES, 'M30T', 'M30T_IR.JPG'), path.join(flight, 'DJI_20220902151742_0001_T.JPG'));
  const queueFile = path.join(dir, 'state', 'queue.db');

  // first run
  let queue = new Queue(queueFile);
  let agent = new Agent({ queue, api, config: parseConfig({}), quietMs: 300 });
  const matches: string[] = [];
  agent.on('wayline', (e) => matches.push(`${e.folder}=${e.match?.waylineName ?? 'none'}`));
  agent.start();
  await agent.addFolder(root);
  await until('first file', () => queue.counts().done.files === 1);
  expect(matches).toEqual(['DJI_202209021517_001_Solar_Farm_North=Solar farm north']);
  await agent.stop();
  queue.close();

  // while stopped: one file added
  copyOld(path.join(FIXTURES, 'M3T', 'M3T_IR.JPG'), path.join(flight, 'DJI_20220902151800_0002_T.JPG'));

  // second run: reconciles by scan; the old file is recognised by path+size+mtime
  queue = new Queue(queueFile);
  agent = new Agent({ queue, api, config: parseConfig({}), quietMs: 300 });
  const outcomes: string[] = [];
  agent.on('file', (e) => outcomes.push(`${path.basename(e.relPath)}:${e.outcome}`));
  agent.start();
  await agent.addFolder(root);
  await until('second file', () => queue.counts().done.files === 2);
  expect(outcomes).toEqual(['DJI_20220902151800_0002_T.JPG:uploaded']);
  expect(await svc.admin.mediaRecords(ws)).toHaveLength(2);

  // history: per flight folder with its wayline; the user can correct the match
  const history = agent.history.list(10);
  expect(history[0]).toMatchObject({
    folder: 'DJI_202209021517_001_Solar_Farm_North',
    files: 1,
    wayline: { waylineName: 'Solar farm north', how: 'normalised' },
  });
  const other = (await agent.waylines.all()).find((w) => w.name === 'Waypoint2')!;
  await agent.setFolderWayline('DJI_202209021517_001_Solar_Farm_North', other.id!);
  expect(agent.history.list(1)[0]!.wayline).toMatchObject({ waylineName: 'Waypoint2', how: 'user' });

  // the watched folder disappears (share unmounted) and comes back: parked, not deleted
  const away = path.join(dir, 'away');
  fs.renameSync(root, away);
  await sleep(1500);
  expect(queue.counts().done.files).toBe(2);
  fs.renameSync(away, root);
  copyOld(path.join(FIXTURES, 'ZH20T', 'DJI_H20T.jpg'), path.join(flight, 'DJI_20220902151900_0003_T.JPG'));
  await until('third file after the folder came back', () => queue.counts().done.files === 3);
  await agent.stop();
  queue.close();
}, 60_000);

it('a file written just before the folder is added (still fresh) is synced once it has settled', async () => {
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
  const root = path.join(dir, 'fresh');
  const file = path.join(root, 'DCIM', '100MEDIA', 'DJI_0009.JPG');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'M2EA', 'M2EA_IR.JPG'), file); // mtime: now, never touched again
  const queue = new Queue(path.join(dir, 'state-fresh', 'queue.db'));
  const agent = new Agent({ queue, api, config: parseConfig({}), quietMs: 800 });
  agent.start();
  try {
    await agent.addFolder(root);
    expect(queue.list()).toHaveLength(0); // too fresh at first: maybe still being copied
    await until('the settled file', () => queue.counts().done.files === 1, 15_000);
  } finally {
    await agent.stop();
    queue.close();
  }
}, 30_000);

// A folder that holds the agent's own folders: `watch ~` on Windows holds AppData\Roaming\drone-media-sync
// (the queue, its -wal file, the settings), and a crew may copy cards into a folder of the one watched.
// Neither is read as the folder's files, and the queue's own writes never wake a scan of it.
it("a watched folder holding the agent's own state and copies: neither is read, its writes wake no scan", async () => {
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
  const home = path.join(dir, 'home-own');
  const photo = path.join(home, 'Flights', 'DCIM', '100MEDIA', 'DJI_0001.JPG');
  copyOld(path.join(FIXTURES, 'M3T', 'M3T_IR.JPG'), photo);
  const copies = path.join(home, 'DroneCopies');
  const queue = new Queue(path.join(home, 'AppData', 'Roaming', 'drone-media-sync', 'queue.db'));
  // The desktop app's browser profile and log file (Electron's userData): written all the time.
  const browser = path.join(home, 'AppData', 'Roaming', 'Drone Media Sync');
  const logFile = path.join(browser, 'logs', 'main.log');
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  fs.writeFileSync(path.join(browser, 'Cookies'), 'a browser file');
  fs.writeFileSync(logFile, 'started\n');
  const agent = new Agent({
    queue,
    api,
    config: parseConfig({ destinations: [{ path: copies }] }),
    quietMs: 300,
    ownFolders: [{ path: browser, what: "the desktop app's browser data" }],
  });
  const logging = setInterval(() => fs.appendFileSync(logFile, 'a line of the log\n'), 200);
  const scans: Array<{
    pending: number;
    skipped: Array<{ relPath: string; kind: string; message: string }>;
  }> = [];
  agent.on('source', (e) => {
    if (e.type === 'scanned') scans.push({ pending: e.pending, skipped: e.skipped });
  });
  agent.start();
  try {
    await agent.addFolder(home);
    await until('the photo', () => queue.counts().done.files === 1, 20_000);
    // A file the copies' folder holds from an earlier run: the agent's own, never the folder's.
    copyOld(path.join(FIXTURES, 'M30T', 'M30T_IR.JPG'), path.join(copies, 'OLD_CARD', 'DJI_0002.JPG'));
    await sleep(2500); // the queue writes its -wal file meanwhile (each done file, each scan)
    const settled = scans.length;
    await sleep(2500);
    expect(scans.length, 'scans woken by nothing but the agent itself').toBe(settled);
    expect(queue.list().map((r) => r.relPath)).toEqual(['Flights/DCIM/100MEDIA/DJI_0001.JPG']);
    const own = scans[0]!.skipped.filter((s) => s.kind === 'own');
    expect(own.map((s) => s.relPath).sort()).toEqual([
      'AppData/Roaming/Drone Media Sync',
      'AppData/Roaming/drone-media-sync',
    ]);
    const said = (rel: string) => own.find((s) => s.relPath === rel)!.message;
    expect(said('AppData/Roaming/drone-media-sync')).toMatch(
      /Drone Media Sync's own folder \(its queue and settings\): not read/,
    );
    expect(said('AppData/Roaming/Drone Media Sync')).toMatch(
      /Drone Media Sync's own folder \(the desktop app's browser data\): not read/,
    );

    // A scan after the copies' folder exists (Sync now) leaves it out too, and the watcher still sees the rest.
    await agent.syncNow();
    const last = scans.at(-1)!;
    expect(
      last.skipped
        .filter((s) => s.kind === 'own')
        .map((s) => s.relPath)
        .sort(),
    ).toEqual(['AppData/Roaming/Drone Media Sync', 'AppData/Roaming/drone-media-sync', 'DroneCopies']);
    copyOld(
      path.join(FIXTURES, 'M2EA', 'M2EA_IR.JPG'),
      path.join(home, 'Flights', 'DCIM', '100MEDIA', 'DJI_0003.JPG'),
    );
    await until('the new photo', () => queue.counts().done.files === 2, 20_000);
    const names = (await svc.admin.mediaRecords(svc.workspaceId)).map((r) => r.name);
    expect(names).toContain('DJI_0003.JPG');
    expect(names.filter((n) => /queue\.db|DJI_0002|Cookies|main\.log/.test(n))).toEqual([]);
  } finally {
    clearInterval(logging);
    await agent.stop();
    queue.close();
  }
}, 60_000);
