import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent, type SourceEvent } from '../../main/core/agent.js';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { CardMonitor } from '../../main/core/sources/cards.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { FIXTURES, tempDir, until } from '../support/harness.js';

// Real folders as mount roots, the real watcher (chokidar), the real service
// and bucket. A "card" is a folder appearing under the mount root.
let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-cards-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function startAgent(
  ws: string,
  token: string,
  mountRoot: string,
  stateName: string,
  config = {},
  monitorMs = 200,
) {
  const queue = new Queue(path.join(dir, stateName, 'queue.db'));
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: ws, token });
  const agent = new Agent({ queue, api, config: parseConfig(config), quietMs: 400 });
  const events: SourceEvent[] = [];
  agent.on('source', (e) => events.push(e));
  agent.start();
  const monitor = new CardMonitor({ mountRoots: [mountRoot], intervalMs: monitorMs });
  agent.watchCards(monitor);
  return { agent, queue, events, monitor };
}

/**
 * A card with one flight folder: a video of `size` random bytes and the given fixtures,
 * all copied long ago (no quiet period to wait for).
 */
function videoCard(
  card: string,
  flight: string,
  video: string,
  size: number,
  more: Array<[string, string]> = [],
): void {
  const folder = path.join(card, 'DCIM', flight);
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, video), crypto.randomBytes(size));
  for (const [from, name] of more) fs.copyFileSync(from, path.join(folder, name));
  const old = Date.now() / 1000 - 60;
  for (const f of fs.readdirSync(folder)) fs.utimesSync(path.join(folder, f), old, old);
}

it('syncs a card copied in slowly once complete, and ignores a non-DJI volume', async () => {
  const ws = await svc.admin.createWorkspace('slow-card');
  const token = await svc.admin.createToken({ workspaceId: ws });
  const mount = path.join(dir, 'mnt-a');
  fs.mkdirSync(mount);
  const { agent, queue, events } = startAgent(ws, token, mount, 'state-a');
  try {
    // A USB stick with documents: never synced.
    fs.mkdirSync(path.join(mount, 'USBSTICK', 'Documents'), { recursive: true });
    fs.writeFileSync(path.join(mount, 'USBSTICK', 'Documents', 'report.JPG'), 'not media of a drone');

    // The card appears, then its files arrive in chunks as from a slow reader.
    const folder = path.join(mount, 'DJI_CARD', 'DCIM', 'DJI_202209021517_001_Waypoint1');
    fs.mkdirSync(folder, { recursive: true });
    const src = fs.readFileSync(path.join(FIXTURES, 'M30T', 'M30T_IR.JPG'));
    const dest = path.join(folder, 'DJI_20220902151742_0001_T.JPG');
    for (let i = 0; i < src.length; i += 100_000) {
      fs.appendFileSync(dest, src.subarray(i, i + 100_000));
      await sleep(120);
    }
    await until('the upload', () => queue.counts().done.files === 1);
    await sleep(1500);
    const records = await svc.admin.mediaRecords(ws);
    expect(records).toHaveLength(1);
    expect(records[0]!.name).toBe('DJI_20220902151742_0001_T.JPG');
    expect(records[0]!.fingerprint).toBe(crypto.createHash('md5').update(src).digest('hex'));
    expect(events.filter((e) => e.type === 'source-added').map((e) => e.source.label)).toEqual(['DJI_CARD']);
  } finally {
    await agent.stop();
    queue.close();
  }
});

it('a card pulled mid-upload waits, then completes when it comes back: one record, no recorded part re-sent', async () => {
  const ws = await svc.admin.createWorkspace('pulled-card');
  const token = await svc.admin.createToken({ workspaceId: ws });
  const mount = path.join(dir, 'mnt-b');
  const card = path.join(mount, 'M30T_CARD');
  const size = 30 * 1024 * 1024;
  videoCard(card, 'DJI_202301011200_001_Bridge', 'DJI_20230101120000_0001_W.MP4', size, [
    [path.join(FIXTURES, 'M3T', 'M3T_IR.JPG'), 'DJI_20230101120001_0002_T.JPG'],
  ]);

  const { agent, queue, events } = startAgent(ws, token, mount, 'state-b', {
    partSizeMiB: 5,
    concurrency: { files: 1, parts: 1 },
    bandwidthLimitKiBps: 8 * 1024,
  });
  try {
    const video = () => queue.list().find((r) => r.relPath.endsWith('.MP4'));
    await until('two parts', () => (video() ? queue.parts(video()!.id).length >= 2 : false));
    const away = path.join(dir, 'pulled');
    fs.renameSync(card, away); // the card is pulled out
    await until('the removal', () => events.some((e) => e.type === 'source-removed'));
    await until('parking', () => video()!.state === 'waiting-for-source');
    const partsKept = queue.parts(video()!.id).length;
    expect(partsKept).toBeGreaterThanOrEqual(2);
    const removed = events.find((e) => e.type === 'source-removed')!;
    expect(removed.message).toMatch(
      /M30T_CARD was removed; \d+ files? will continue when it is inserted again/,
    );
    expect((await svc.admin.mediaRecords(ws)).filter((r) => r.name.endsWith('.MP4'))).toHaveLength(0);

    fs.renameSync(away, card); // and inserted again
    await until('completion', () => queue.counts().done.files === 2, 30_000);
    const v = video()!;
    // The resumed upload sent only what was not recorded when the card was pulled.
    expect(v.bytesSent).toBe(size - partsKept * 5 * 1024 * 1024);
    const records = (await svc.admin.mediaRecords(ws)).filter((r) => r.source === 'callback');
    expect(records.map((r) => r.name).sort()).toEqual([
      'DJI_20230101120000_0001_W.MP4',
      'DJI_20230101120001_0002_T.JPG',
    ]);
  } finally {
    await agent.stop();
    queue.close();
  }
}, 60_000);

// The card's own watcher may notice a pull before the card monitor does (each looks on its own
// timer). A card put back before the monitor's next look was then never looked at again: the
// watcher had stopped, and the monitor had never seen it go (a test of the pull above failed so
// in CI, 2 of about 20 runs). The monitor is the one door for a card coming and going: here it
// never looks by itself (a 10-minute interval), so only the watcher notices the pull, and the
// monitor's own look after the card is back is made by hand.
it('a card pulled and put back before the card monitor looks again is taken up again', async () => {
  const ws = await svc.admin.createWorkspace('quick-reseat');
  const token = await svc.admin.createToken({ workspaceId: ws });
  const mount = path.join(dir, 'mnt-q');
  const card = path.join(mount, 'M3E_CARD');
  videoCard(card, 'DJI_202301011300_001_Tower', 'DJI_20230101130000_0001_W.MP4', 20 * 1024 * 1024);

  const { agent, queue, events, monitor } = startAgent(
    ws,
    token,
    mount,
    'state-q',
    { partSizeMiB: 5, concurrency: { files: 1, parts: 1 }, bandwidthLimitKiBps: 4 * 1024 },
    600_000,
  );
  try {
    const video = () => queue.list()[0];
    await until('a part', () => (video() ? queue.parts(video()!.id).length >= 1 : false));
    const away = path.join(dir, 'pulled-q');
    fs.renameSync(card, away);
    await until('parking', () => video()!.state === 'waiting-for-source', 10_000);
    expect(events.filter((e) => e.type === 'source-removed')).toHaveLength(1);
    expect(monitor.cards()).toHaveLength(0); // the monitor was told, by the watcher's look
    fs.renameSync(away, card);
    monitor.poll(); // the monitor's next look
    await until('completion', () => queue.counts().done.files === 1, 30_000);
    expect(events.filter((e) => e.type === 'source-added')).toHaveLength(2);
    const records = (await svc.admin.mediaRecords(ws)).filter((r) => r.source === 'callback');
    expect(records.map((r) => r.name)).toEqual(['DJI_20230101130000_0001_W.MP4']);
  } finally {
    await agent.stop();
    queue.close();
  }
}, 60_000);

it('auto-sync off: the card is announced but synced only on "Sync now"; eject after sync never deletes', async () => {
  const ws = await svc.admin.createWorkspace('manual-card');
  const token = await svc.admin.createToken({ workspaceId: ws });
  const mount = path.join(dir, 'mnt-c');
  const folder = path.join(mount, 'MANUAL', 'DCIM', '100MEDIA');
  fs.mkdirSync(folder, { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'M3T', 'M3T_IR.JPG'), path.join(folder, 'DJI_0001.JPG'));
  const old = Date.now() / 1000 - 60;
  fs.utimesSync(path.join(folder, 'DJI_0001.JPG'), old, old);
  const { agent, queue, events } = startAgent(ws, token, mount, 'state-c', {
    autoSyncCards: false,
    ejectAfterSync: true,
  });
  try {
    await until('the card', () => events.some((e) => e.type === 'source-added'));
    await sleep(800);
    expect(queue.list()).toHaveLength(0); // nothing read without the user's go
    await agent.syncNow();
    await until('the upload', () => queue.counts().done.files === 1);
    // Not a real mount point here, so the OS refuses to eject: reported, not retried, nothing deleted.
    await until('the eject attempt', () =>
      events.some((e) => e.type === 'ejected' || e.type === 'eject-failed'),
    );
    const ej = events.find((e) => e.type === 'ejected' || e.type === 'eject-failed')!;
    expect('message' in ej && ej.message).toMatch(/MANUAL/);
    expect(fs.existsSync(path.join(folder, 'DJI_0001.JPG'))).toBe(true);
  } finally {
    await agent.stop();
    queue.close();
  }
}, 30_000);
