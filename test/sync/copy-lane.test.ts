/**
 * Issue 29: the copy lane and the upload lane are peers under the agent.
 * The copy lane has its own loop: what the upload meets (a sign-in refused
 * mid-run, the server failing) never stops or slows the copies; the upload
 * takes a file only once the copy lane has read it. The agent and the
 * reference service run in-process; the card, the copies and the queue are
 * real files on disk.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../main/core/agent.js';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { serverTarget } from '../../main/core/session/target.js';
import { folderSource } from '../../main/core/sources/source.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { tempDir } from '../support/harness.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-copy-lane-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex');

/** A card of `n` photos of `size` random bytes each (the agent reads a photo's bytes; these have no EXIF). */
function cardOf(name: string, n: number, size: number): { root: string; sums: Map<string, string> } {
  const root = path.join(dir, name);
  const folder = path.join(root, 'DCIM', 'DJI_202405061015_001_Quarry');
  fs.mkdirSync(folder, { recursive: true });
  const sums = new Map<string, string>();
  for (let i = 1; i <= n; i++) {
    const rel = `DCIM/DJI_202405061015_001_Quarry/DJI_20240506101512_${String(i).padStart(4, '0')}_V.JPG`;
    const bytes = crypto.randomBytes(size);
    fs.writeFileSync(path.join(root, rel), bytes);
    sums.set(rel, md5(bytes));
  }
  return { root, sums };
}

function agentOn(workspaceId: string, token: string, ssd: string, state: string) {
  const queue = new Queue(path.join(state, 'queue.db'));
  queue.bindTarget(serverTarget(svc.baseUrl, workspaceId));
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId, token });
  const agent = new Agent({
    queue,
    api,
    config: parseConfig({ callbackSettleSeconds: 1, destinations: [{ path: ssd }] }),
    manifestsDir: path.join(state, 'manifests'),
  });
  return { queue, agent };
}

describe('the copy lane, the upload lane’s peer', () => {
  it('a sign-in refused at the first upload: every copy is still made and verified; only the upload stops', async () => {
    // 24 photos of 1 MiB: the copies are still being made when the first upload meets the refusal.
    const { root, sums } = cardOf('REVOKED', 24, 1024 * 1024);
    const ssd = path.join(dir, 'SSD_REVOKED');
    fs.mkdirSync(ssd);
    const ws = await svc.admin.createWorkspace('Revoked');
    const token = await svc.admin.createToken({ workspaceId: ws });
    // The token was revoked since the crew signed in: the agent learns it from the server's answer.
    await svc.admin.revokeToken(token);
    const { queue, agent } = agentOn(ws, token, ssd, path.join(dir, 'state-revoked'));
    const local: boolean[] = [];
    agent.on('local', (l) => local.push(l.offload.local?.safe ?? false));
    try {
      const { result, sources } = await agent.syncOnce([root]);
      expect(agent.engine.state).toBe('auth-required');
      expect(result.stopped.kind).toBe('sign-in');
      // Every file copied and read back on the SSD, byte for byte the card's.
      const verified = queue.copies.inState('verified', sources[0]!.sourceId);
      expect(verified.map((c) => c.relPath).sort()).toEqual([...sums.keys()].sort());
      for (const c of verified) expect(md5(fs.readFileSync(c.path)), c.relPath).toBe(sums.get(c.relPath));
      expect(result.cards[0]?.destinations.map((d) => [d.destination.label, d.copied.files])).toEqual([
        ['SSD_REVOKED', 24],
      ]);
      // Locally safe, said once, while nothing went up.
      expect(local).toEqual([true]);
      expect(result.uploaded.files).toBe(0);
      expect(result.left.files).toHaveLength(24);
    } finally {
      await agent.stop();
      queue.close();
    }
  }, 60_000);

  it('watch and the app (run until stopped): the same refusal never stops the copies; the card is locally safe', async () => {
    const { root, sums } = cardOf('REVOKED_WATCH', 16, 1024 * 1024);
    const ssd = path.join(dir, 'SSD_WATCH');
    fs.mkdirSync(ssd);
    const ws = await svc.admin.createWorkspace('Revoked, watched');
    const token = await svc.admin.createToken({ workspaceId: ws });
    await svc.admin.revokeToken(token);
    const { queue, agent } = agentOn(ws, token, ssd, path.join(dir, 'state-watch'));
    const safe = new Promise<boolean>((resolve) =>
      agent.on('local', (l) => resolve(l.offload.local?.safe ?? false)),
    );
    try {
      agent.start();
      await agent.addFolder(root);
      expect(await safe).toBe(true);
      // A watched folder is a source by its path.
      const verified = queue.copies.inState('verified', folderSource(root).sourceId);
      expect(verified.map((c) => c.relPath).sort()).toEqual([...sums.keys()].sort());
      for (const c of verified) expect(md5(fs.readFileSync(c.path)), c.relPath).toBe(sums.get(c.relPath));
      expect(agent.engine.state).toBe('auth-required');
      expect(queue.counts().done.files).toBe(0);
    } finally {
      await agent.stop();
      queue.close();
    }
  }, 60_000);
});
