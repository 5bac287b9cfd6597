/**
 * Issue 32, "leave flagged frames out of a metered upload": the real agent
 * and engine, a real SQLite queue, the real reference service over HTTP,
 * the link's real policy (LinkGate on a real LinkStore file) told the
 * network is metered, as the link watcher tells it (test/cli/watch-link
 * pins it through the CLI; the policy is the same object). The card: real
 * M3T photos in one 100MEDIA folder, four made unusable on purpose
 * (test/support/flight-card.ts: a black preview, a gimbal at -10°, zero
 * GPS, a frame at 3 m in an 80 m flight).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent } from '../../main/core/agent.js';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { LinkGate } from '../../main/core/link/gate.js';
import { LinkStore } from '../../main/core/link/store.js';
import { cardOffload } from '../../main/core/offload/card.js';
import { Queue } from '../../main/core/queue/queue.js';
import { folderSource } from '../../main/core/sources/source.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { queueLaneLines } from '../../main/cli/lanes.js';
import { tempDir, until } from '../support/harness.js';
import { badCard, writeFlightCard } from '../support/flight-card.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-flagged-metered-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const FLAGGED = ['DJI_0003.JPG', 'DJI_0005.JPG', 'DJI_0009.JPG', 'DJI_0012.JPG'];

type Row = { name: string; state: string; bytes_sent: number; lane: number; file_class: string };

/** Each file of the queue as its SQLite file holds it. */
function rows(file: string): Row[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (
      db
        .prepare('SELECT rel_path, state, bytes_sent, lane, file_class FROM files ORDER BY rel_path')
        .all() as Array<Omit<Row, 'name'> & { rel_path: string }>
    ).map(({ rel_path, ...r }) => ({ name: path.posix.basename(rel_path), ...r }));
  } finally {
    db.close();
  }
}

it('a metered link with the crew’s yes sends the good photos; the flagged ones wait for an unmetered network, then go', async () => {
  const root = path.join(dir, 'M3T_FIELD');
  const shots = writeFlightCard(root, 'DCIM/100MEDIA', badCard(true));
  const old = new Date(Date.now() - 3_600_000);
  for (const s of shots) fs.utimesSync(path.join(root, s.relPath), old, old);
  const queueFile = path.join(dir, 'state', 'queue.db');
  const queue = new Queue(queueFile);
  const gate = new LinkGate(new LinkStore(path.join(dir, 'state', 'link.json')));
  // The network the agent is on: a 4G hotspot, metered, nothing answered yet (only the first lane goes).
  const hotspot = { key: 'wifi:FIELD-4G', label: 'FIELD-4G', cost: 'metered' as const };
  gate.see(hotspot);
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
  // 16 files at once: the whole card is read while the photos wait for the crew's answer.
  const config = parseConfig({
    holdFlaggedOnMetered: true,
    concurrency: { files: 16 },
    callbackSettleSeconds: 1,
  });
  const agent = new Agent({ queue, api, config, quietMs: 300, gate });
  const read: string[] = [];
  agent.engine.on('read', (e) => read.push(e.sourceId));
  agent.start();
  try {
    await agent.addFolder(root);
    // The card's one read is done, so are its checks: the four unusable photos are in the flagged lane.
    await until('the card read', () => read.length > 0, 60_000);
    await until('flagged', () => rows(queueFile).filter((r) => r.file_class === 'flagged').length === 4);
    expect(
      rows(queueFile)
        .filter((r) => r.file_class === 'flagged')
        .map((r) => r.name),
    ).toEqual(FLAGGED);
    expect(rows(queueFile).every((r) => r.bytes_sent === 0)).toBe(true);

    // The crew says yes to the metered network: the good photos go, the flagged ones do not.
    gate.answer('yes');
    expect(gate.state).toMatchObject({ name: 'open', cost: 'metered' });
    await until(
      'the good photos uploaded',
      () => rows(queueFile).filter((r) => r.state === 'done').length === 14,
      60_000,
    );
    // Given time to go if they could: they stay, not a byte sent.
    await new Promise((r) => setTimeout(r, 1500));
    const held = rows(queueFile).filter((r) => r.state !== 'done');
    expect(held.map((r) => r.name)).toEqual(FLAGGED);
    expect(held.every((r) => r.bytes_sent === 0)).toBe(true);
    expect(await svc.admin.mediaRecords(svc.workspaceId)).toHaveLength(14);

    // Said truthfully: status's line, and the card is not safe to format in the workspace.
    expect(queueLaneLines(queue)).toEqual([
      'Next: 4 flagged photos wait for an unmetered network; they are on the card.',
    ]);
    const card = { sourceId: folderSource(root).sourceId, label: 'M3T_FIELD' };
    const verdict = cardOffload(queue, card).verdict;
    expect(verdict.safe).toBe(false);
    expect(verdict.message).toBe(
      'M3T_FIELD: not safe to format yet — 4 flagged waiting for an unmetered network',
    );
    expect(verdict.reasons).toEqual([
      '4 flagged photos wait for an unmetered network; they are on the card (DJI_0003.JPG, DJI_0005.JPG, DJI_0009.JPG and 1 more): they are sent once this computer is on a network that is not metered.',
    ]);

    // Back on an unmetered network (the office Wi-Fi): they go, with no restart.
    gate.see({ key: 'wifi:OFFICE', label: 'OFFICE', cost: 'unmetered' });
    await until('all uploaded', () => rows(queueFile).every((r) => r.state === 'done'), 60_000);
    expect(await svc.admin.mediaRecords(svc.workspaceId)).toHaveLength(18);
    expect(queueLaneLines(queue)).toEqual([]);
    expect(cardOffload(queue, card).verdict.reasons).not.toContainEqual(expect.stringMatching(/flagged/));
  } finally {
    await agent.stop();
    queue.close();
  }
}, 180_000);

it('off (the default): flagged photos go with the others over the metered network after the yes', async () => {
  const root = path.join(dir, 'M3T_DEFAULT');
  const shots = writeFlightCard(root, 'DCIM/100MEDIA', badCard(true));
  const old = new Date(Date.now() - 3_600_000);
  for (const s of shots) fs.utimesSync(path.join(root, s.relPath), old, old);
  const queueFile = path.join(dir, 'state-off', 'queue.db');
  const queue = new Queue(queueFile);
  const gate = new LinkGate(new LinkStore(path.join(dir, 'state-off', 'link.json')));
  gate.see({ key: 'wifi:FIELD-4G', label: 'FIELD-4G', cost: 'metered' });
  gate.answer('yes');
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
  const agent = new Agent({
    queue,
    api,
    config: parseConfig({ concurrency: { files: 16 }, callbackSettleSeconds: 1 }),
    quietMs: 300,
    gate,
  });
  agent.start();
  try {
    await agent.addFolder(root);
    await until(
      'all uploaded',
      () => rows(queueFile).length === 18 && rows(queueFile).every((r) => r.state === 'done'),
      60_000,
    );
    expect(rows(queueFile).some((r) => r.file_class === 'flagged')).toBe(false);
  } finally {
    await agent.stop();
    queue.close();
  }
}, 180_000);

it('on, with the yes given before the card: no photo leaves before the card is read whole and checked', async () => {
  const root = path.join(dir, 'M3T_EARLY');
  const shots = writeFlightCard(root, 'DCIM/100MEDIA', badCard(true));
  const old = new Date(Date.now() - 3_600_000);
  for (const s of shots) fs.utimesSync(path.join(root, s.relPath), old, old);
  const queueFile = path.join(dir, 'state-early', 'queue.db');
  const queue = new Queue(queueFile);
  const gate = new LinkGate(new LinkStore(path.join(dir, 'state-early', 'link.json')));
  gate.see({ key: 'wifi:FIELD-4G', label: 'FIELD-4G', cost: 'metered' });
  gate.answer('yes');
  // A service of its own: the photos are not known to it yet (the tests above sent the same card).
  const own = await startService({ dataDir: path.join(dir, 'svc-early'), logger: false });
  const api = new ApiClient({ baseUrl: own.baseUrl, workspaceId: own.workspaceId, token: own.token });
  // Two files at a time: the first photos are read (and could be sent) long before the last one.
  const config = parseConfig({
    holdFlaggedOnMetered: true,
    concurrency: { files: 2 },
    callbackSettleSeconds: 1,
  });
  const agent = new Agent({ queue, api, config, quietMs: 300, gate });
  agent.start();
  try {
    await agent.addFolder(root);
    await until(
      'the good photos uploaded',
      () => rows(queueFile).filter((r) => r.state === 'done').length === 14,
      90_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    // Before: DJI_0003 (a black frame, read early) went over the metered network before the checks ran.
    const held = rows(queueFile).filter((r) => r.state !== 'done');
    expect(held.map((r) => r.name)).toEqual(FLAGGED);
    expect(held.every((r) => r.bytes_sent === 0)).toBe(true);
    expect(await own.admin.mediaRecords(own.workspaceId)).toHaveLength(14);
  } finally {
    await agent.stop();
    queue.close();
    await own.close();
  }
}, 180_000);
