/**
 * The agent alone, in its run-once mode (`sync`) and as the long-running
 * agent: a real SQLite queue, real files and manifests on disk; the server
 * and the bucket are stand-ins in this process (test/support/stand-ins.ts;
 * the server-backed suites in test/ run the same against the real service).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memoryBucket, standIn } from '../../test/support/stand-ins.js';
import { Agent, type SourceEvent } from './agent.js';
import { parseConfig } from './config.js';
import { DmsError } from './errors.js';
import { Queue } from './queue/queue.js';
import { folderSource } from './sources/source.js';
import { syncLanes } from './sync/peers.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-agent-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function card(name: string, files: Record<string, string>): string {
  const root = path.join(dir, name);
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), content);
  }
  return root;
}

function agentFor(s: ReturnType<typeof standIn>, destinations: string[] = []) {
  const queue = new Queue(path.join(dir, 'state', 'queue.db'));
  const config = parseConfig({ destinations: destinations.map((p) => ({ path: p })) });
  const target = { key: 'stand-in#ws', label: 'stand-in', workspaceId: 'ws' };
  const lanes = syncLanes({
    queue,
    api: s.api,
    target,
    config,
    createUploader: memoryBucket(s.calls).create,
  });
  const agent = new Agent({
    queue,
    api: s.api,
    config,
    lanes,
    manifestsDir: path.join(dir, 'state', 'manifests'),
  });
  return { queue, agent, lanes };
}

describe('the agent, run once (sync)', () => {
  it('scans each folder, syncs them, and gives each its verdict and manifest, by the one label', async () => {
    const s = standIn();
    const { queue, agent } = agentFor(s);
    const a = card('M3E_CARD', { 'DCIM/100MEDIA/DJI_0001.JPG': 'one', 'DCIM/100MEDIA/DJI_0002.JPG': 'two' });
    const b = card('SECOND', { 'DCIM/100MEDIA/DJI_0003.JPG': 'three' });
    const scanned: SourceEvent[] = [];
    agent.on('source', (e) => scanned.push(e));
    const { completed } = await agent.syncOnce([a, b]);
    expect(scanned.map((e) => e.type === 'scanned' && [e.source.label, e.pending])).toEqual([
      ['M3E_CARD', 2],
      ['SECOND', 1],
    ]);
    expect(completed.map((c) => c.offload.verdict.message)).toEqual([
      'M3E_CARD: 2 files verified in workspace ws — safe to format',
      'SECOND: 1 file verified in workspace ws — safe to format',
    ]);
    for (const c of completed) expect(fs.existsSync(path.join(c.manifest.dir, 'report.json'))).toBe(true);
    // The manifest went to the bucket too, under the workspace's prefix.
    expect(s.calls.filter((c) => c === 'put report.json')).toHaveLength(2);
    // One label per source, kept by the store: the history and the reports use it.
    expect(queue.history.list().map((h) => h.label)).toEqual(['SECOND', 'M3E_CARD']);
    expect(queue.sources.labelOf(`folder:${a}`)).toBe('M3E_CARD');
    await agent.stop();
    queue.close();
  });

  it('stops short without a verdict when the sign-in is refused', async () => {
    const s = standIn();
    s.script.fastUpload = () => new DmsError('auth', 'token revoked');
    const { queue, agent } = agentFor(s);
    const a = card('CARD', { 'DCIM/100MEDIA/DJI_0001.JPG': 'one' });
    const verdicts: unknown[] = [];
    agent.on('offload', (o) => verdicts.push(o));
    const { completed } = await agent.syncOnce([a]);
    expect(agent.engine.state).toBe('auth-required');
    expect(completed).toEqual([]);
    expect(verdicts).toEqual([]);
    await agent.stop();
    queue.close();
  });
});

describe('the agent, long-running (watch, the app)', () => {
  it('a card pulled before it is copied: the copy lane stops its copies, the upload lane parks its files', async () => {
    const s = standIn();
    const ssd = path.join(dir, 'SSD');
    fs.mkdirSync(ssd);
    const { queue, agent, lanes } = agentFor(s, [ssd]);
    const root = card('PULLED', { 'DCIM/100MEDIA/DJI_0001.JPG': 'one', 'DCIM/100MEDIA/DJI_0002.JPG': 'two' });
    const source = folderSource(root);
    // Scanned (each file wanted on the SSD), not run: nothing is copied yet.
    await lanes.engine.scan(source);
    expect(queue.copies.inState('wanted', source.sourceId)).toHaveLength(2);
    expect(agent.sourceGone(source)).toBe(2);
    // The agent is the one door for both lanes: no copy stays wanted from a card that is gone.
    expect(queue.copies.inState('wanted', source.sourceId)).toEqual([]);
    expect(queue.copies.inState('stopped', source.sourceId).map((c) => c.error)).toEqual([
      'PULLED was removed before this file was copied to SSD: insert it again to copy it.',
      'PULLED was removed before this file was copied to SSD: insert it again to copy it.',
    ]);
    await agent.stop();
    queue.close();
  });

  it('follows a folder: files found, synced, recorded in the history under the folder’s name', async () => {
    const s = standIn();
    const { queue, agent } = agentFor(s);
    const root = card('WATCHED', { 'DCIM/100MEDIA/DJI_0001.JPG': 'one' });
    const idle = new Promise<void>((resolve) => agent.once('idle', resolve));
    agent.start();
    await agent.addFolder(root);
    await idle;
    expect(queue.counts().done.files).toBe(1);
    expect(queue.history.list()[0]).toMatchObject({ label: 'WATCHED', files: 1 });
    await agent.stop();
    queue.close();
  });
});
