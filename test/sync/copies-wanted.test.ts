/**
 * Issue 29: copies are wanted per card, not for the whole queue. A card
 * with destinations that count for it is read by the copy lane (copied and
 * hashed in one read), then sent; a card with none (here: files of an
 * earlier run without copies, still in the queue) is read and sent by the
 * upload lane itself, with no wait on the copy lane. The reference service
 * runs in-process; the cards, the copies and the queue are real files on
 * disk. The copy lane's first read is held (a wrapper around the real
 * `LocalCopies.copy`, counting the reads) until the other card is done, or
 * for a bound: the card without copies must not need the copy lane at all.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { serverTarget } from '../../main/core/session/target.js';
import { folderSource } from '../../main/core/sources/source.js';
import { syncLanes } from '../../main/core/sync/peers.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { until } from '../faults/rig.js';
import { tempDir } from '../support/harness.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-copies-wanted-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex');

/** A card of `n` photos of random bytes, named after the card (`tag`). */
function cardOf(tag: string, n: number): { root: string; sums: Map<string, string> } {
  const root = path.join(dir, tag);
  const folder = path.join(root, 'DCIM', 'DJI_202405061015_001_Quarry');
  fs.mkdirSync(folder, { recursive: true });
  const sums = new Map<string, string>();
  for (let i = 1; i <= n; i++) {
    const rel = `DCIM/DJI_202405061015_001_Quarry/${tag}_${String(i).padStart(4, '0')}.JPG`;
    const bytes = crypto.randomBytes(256 * 1024);
    fs.writeFileSync(path.join(root, rel), bytes);
    sums.set(rel, md5(bytes));
  }
  return { root, sums };
}

function filesUnder(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.JPG'));
}

it('in one run, a card without copies is sent with no wait on the copy lane; a card with is copied, then sent', async () => {
  const ws = await svc.admin.createWorkspace('Wanted');
  const token = await svc.admin.createToken({ workspaceId: ws });
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: ws, token });
  const queue = new Queue(path.join(dir, 'queue.db'));
  queue.bindTarget(serverTarget(svc.baseUrl, ws));
  const old = cardOf('OLDCARD', 3);
  const fresh = cardOf('NEWCARD', 3);
  const ssd = path.join(dir, 'SSD');
  fs.mkdirSync(ssd);
  try {
    // An earlier run without copies found OLDCARD and ended before reading it.
    const before = syncLanes({ queue, api, config: parseConfig({ callbackSettleSeconds: 1 }) });
    await before.engine.scan(folderSource(old.root));
    before.engine.close();

    // This run copies to the SSD (`--copy-to`) and is given NEWCARD only.
    const lanes = syncLanes({
      queue,
      api,
      config: parseConfig({ callbackSettleSeconds: 1, destinations: [{ path: ssd }] }),
    });
    const oldDone = () =>
      queue.list({ sourceId: folderSource(old.root).sourceId }).every((r) => r.state === 'done');
    const copyReads: string[] = [];
    let heldUntilOldDone: boolean | null = null;
    const copy = lanes.copies.copy.bind(lanes.copies);
    lanes.copies.copy = async (ctx, row) => {
      copyReads.push(row.relPath);
      // The copy lane's reads wait for OLDCARD to be sent (at most 8 s): it must not be the copy lane's.
      const held = await until('OLDCARD sent', oldDone, 8_000, 20).then(
        () => true,
        () => false,
      );
      heldUntilOldDone = (heldUntilOldDone ?? true) && held;
      return copy(ctx, row);
    };
    const scanned = await lanes.engine.scan(folderSource(fresh.root));
    expect(scanned.pending).toHaveLength(3);
    await lanes.run({ mode: 'until-idle' });
    lanes.engine.close();

    // Every file of both cards is in the workspace.
    expect(
      queue
        .list()
        .map((r) => `${r.relPath} ${r.state}`)
        .sort(),
    ).toEqual([...old.sums.keys(), ...fresh.sums.keys()].map((p) => `${p} done`).sort());
    // OLDCARD was read and sent by the upload lane while the copy lane was held: never read by it.
    expect(copyReads.sort()).toEqual([...fresh.sums.keys()].sort());
    expect(heldUntilOldDone).toBe(true);
    expect(queue.copies.ofSource(folderSource(old.root).sourceId)).toEqual([]);
    // NEWCARD: each file read once by the copy lane, verified on the SSD, byte for byte the card's.
    const copies = queue.copies.ofSource(folderSource(fresh.root).sourceId);
    expect(copies.map((c) => `${c.relPath} ${c.state}`).sort()).toEqual(
      [...fresh.sums.keys()].map((p) => `${p} verified`).sort(),
    );
    for (const c of copies) expect(md5(fs.readFileSync(c.path))).toBe(fresh.sums.get(c.relPath));
    const onSsd = filesUnder(ssd);
    expect(onSsd).toHaveLength(3);
    expect(onSsd.every((p) => p.includes('NEWCARD_'))).toBe(true);
  } finally {
    queue.close();
  }
}, 60_000);
