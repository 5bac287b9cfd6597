/**
 * Issue 20: a video is described from its verified local copy once the card
 * is gone. The agent and the reference service run in-process; the card,
 * its copy and the queue are real files on disk.
 *
 * Within one run a file is described when its copy has just been verified,
 * the card still in; its description is then kept in the queue. A file is
 * read with its card gone when every destination already holds a verified
 * copy of it as it is read (LocalCopies.placeOf, placeAt): a card copied
 * before, sent to another target. So: the card is copied to an SSD and
 * uploaded to one workspace; the crew then sends it to a second workspace
 * (another project) and pulls the card as soon as it is scanned. Every file
 * of the second run, the .MP4 and the .SRT and photo it is described from
 * included, must be read from the copy and arrive with the same positions
 * and metadata as the first time.
 *
 * No real DJI video is among the fixtures (../shared/fixtures has SRTs
 * only): the .MP4 is random bytes, as in the other tests, which is all the
 * agent reads of it (a video says nothing of itself; its SRT and the photos
 * beside it do). The SRT is the real Phantom 4 RTK one.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent } from '../../main/core/agent.js';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { NOT_DONE_STATES } from '../../main/core/queue/states.js';
import { serverTarget } from '../../main/core/session/target.js';
import type { FileEvent } from '../../main/core/sync/engine.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { getObject, tempDir } from '../support/harness.js';
import { buildRtkCard } from '../support/rtk-card.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-video-copy-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex');
const VIDEO = 'DJI_20240506101600_0007_W';

/** One sync of the card to a workspace through the agent, with the SSD as its local destination. */
async function syncTo(
  workspaceId: string,
  token: string,
  card: string,
  ssd: string,
  onScanned: () => void = () => undefined,
) {
  const queue = new Queue(path.join(dir, 'state', 'queue.db'));
  const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId, token });
  // As a session does when the crew switches workspace: the queue's rows are this target's.
  queue.bindTarget(serverTarget(svc.baseUrl, workspaceId));
  const agent = new Agent({
    queue,
    api,
    config: parseConfig({ callbackSettleSeconds: 1, destinations: [{ path: ssd }] }),
    manifestsDir: path.join(dir, 'state', 'manifests'),
  });
  const files: FileEvent[] = [];
  agent.on('file', (e) => files.push(e));
  agent.on('source', (e) => {
    if (e.type === 'scanned') onScanned();
  });
  try {
    const { completed } = await agent.syncOnce([card]);
    const left = queue.list({ states: NOT_DONE_STATES, limit: 1000 });
    const rows = queue.list({ limit: 1000 });
    return { completed, files, left, rows };
  } finally {
    await agent.stop();
    queue.close();
  }
}

it("a card pulled once scanned: the video and its SRT are read from the copy, and arrive with the card's positions", async () => {
  const c = buildRtkCard({ root: path.join(dir, 'card'), mission: 'Quarry', exposures: 4 });
  const flight = path.join(c.root, c.folder);
  fs.writeFileSync(path.join(flight, `${VIDEO}.MP4`), crypto.randomBytes(3 * 1024 * 1024 + 5));
  fs.copyFileSync(path.resolve('test/fixtures/dji/SRT/p4_rtk.SRT'), path.join(flight, `${VIDEO}.SRT`));
  const originals = new Map(
    fs.readdirSync(flight).map((name) => [name, md5(fs.readFileSync(path.join(flight, name)))]),
  );
  const ssd = path.join(dir, 'SSD');
  fs.mkdirSync(ssd);

  // First workspace, the card in: copied to the SSD and uploaded.
  const first = await syncTo(svc.workspaceId, svc.token, c.root, ssd);
  expect(first.left.map((r) => `${r.relPath}: ${r.errorMessage ?? r.state}`)).toEqual([]);
  const copy = path.join(ssd, fs.readdirSync(ssd)[0]!, c.folder);
  for (const [name, sum] of originals) expect(md5(fs.readFileSync(path.join(copy, name))), name).toBe(sum);

  // Second workspace: the card is pulled as soon as it is scanned, before anything of it is read.
  const other = await svc.admin.createWorkspace('Second project');
  const otherToken = await svc.admin.createToken({ workspaceId: other });
  const pulled = `${c.root}-pulled`;
  const second = await syncTo(other, otherToken, c.root, ssd, () => fs.renameSync(c.root, pulled));
  expect(fs.existsSync(c.root), 'the card folder must not come back').toBe(false);
  expect(second.left.map((r) => `${r.relPath}: ${r.errorMessage ?? r.state}`)).toEqual([]);
  const outcomes = second.files.map((f) => `${path.basename(f.relPath)} ${f.outcome}`).sort();
  expect(outcomes).toEqual(
    [...originals.keys()]
      .map((name) => `${name} ${/\.(JPG|MP4)$/.test(name) ? 'uploaded' : 'stored'}`)
      .sort(),
  );

  // The video's row: described from the SRT and a photo beside its copy (the card's are gone).
  const videoRow = second.rows.find((r) => r.relPath.endsWith(`${VIDEO}.MP4`));
  expect(videoRow && 'info' in videoRow ? videoRow.info?.warnings : undefined).toEqual([
    `Video: position from ${VIDEO}.SRT (cue 1).`,
    'Capture time taken from the file name (no date in a .SRT beside it).',
    'Aircraft and camera taken from DJI_20240506101512_0001_V.JPG in the same folder.',
  ]);

  // At the service: the video where the SRT's first fix puts it (the P4 RTK sample, in Argentina,
  // longitude first), its aircraft from the photos beside it; every record as the first workspace's.
  const records = async (ws: string) =>
    new Map(
      (await svc.admin.mediaRecords(ws))
        .filter((m) => m.source === 'callback')
        .map((m) => [m.name, { metadata: m.metadata, ext: m.ext, sub_file_type: m.sub_file_type }]),
    );
  const [before, after] = [await records(svc.workspaceId), await records(other)];
  const video = after.get(`${VIDEO}.MP4`);
  const position = video?.metadata?.['shoot_position'] as { lat: number; lng: number } | undefined;
  expect(position?.lat).toBeCloseTo(-34.237922, 6);
  expect(position?.lng).toBeCloseTo(-58.851745, 6);
  // The first cue's height and gimbal heading (H 85.80m, G.PRY yaw 110.4°); the aircraft's serial from the photos.
  expect(video?.metadata).toMatchObject({ relative_altitude: 85.8, gimbal_yaw_degree: 110.4 });
  expect(video?.ext?.['sn']).toBe(after.get('DJI_20240506101512_0001_V.JPG')?.ext?.['sn']);
  expect(video?.ext?.['sn']).toBeTruthy();
  expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
  for (const [name, rec] of after) expect(rec, name).toEqual(before.get(name));
  expect(after.size).toBe([...originals.keys()].filter((n) => /\.(JPG|MP4)$/.test(n)).length);

  // Byte-identical in the second workspace's bucket, read from the copy.
  const sts = await new ApiClient({ baseUrl: svc.baseUrl, workspaceId: other, token: otherToken }).getSts();
  for (const m of (await svc.admin.mediaRecords(other)).filter((r) => r.source === 'callback'))
    expect(md5(await getObject(sts, m.object_key)), m.name).toBe(originals.get(m.name));

  // The card's verdict in the second workspace: every file verified there.
  const verdict = second.completed[0]?.offload.verdict;
  expect(verdict?.safe, verdict?.reasons.join(' ')).toBe(true);
  // The flight's report (its map's points, its video) as the first time, the card in.
  const flights = (r: typeof first) =>
    r.completed[0]?.offload.flights.map((f) => ({
      videos: f.videos,
      photos: f.photos,
      positions: f.exposures.map((e) => e.position),
    }));
  expect(flights(second)).toEqual(flights(first));
  expect(flights(second)?.[0]).toMatchObject({ videos: 1, photos: 4 });
}, 180_000);
