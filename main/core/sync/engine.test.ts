/**
 * The engine as an orchestrator, alone: a real SQLite queue and real files
 * on disk; the server and the bucket are stand-ins in this process (the
 * server-backed suites in test/ run it against the real reference service),
 * so each test can say exactly what the server answered and look at the
 * order of the engine's calls and the run state it went through.
 */
import { syncLanes } from './peers.js';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { md5, memoryBucket, standIn } from '../../../test/support/stand-ins.js';
import type { ApiClient } from '../api/client.js';
import { parseConfig } from '../config.js';
import { DmsError } from '../errors.js';
import { Queue } from '../queue/queue.js';
import { folderSource } from '../sources/source.js';
import type { RunStateChange } from './engine.js';

let dir: string;
let card: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-engine-'));
  card = path.join(dir, 'card');
  fs.mkdirSync(path.join(card, 'DCIM', '100MEDIA'), { recursive: true });
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function photo(name: string, content = `photo ${name}`): string {
  const p = path.join(card, 'DCIM', '100MEDIA', name);
  fs.writeFileSync(p, content);
  return p;
}

function engineFor(s: ReturnType<typeof standIn>, settle = 0, destinations: string[] = []) {
  const queue = new Queue(path.join(dir, 'queue.db'));
  const bucket = memoryBucket(s.calls);
  const lanes = syncLanes({
    queue,
    api: s.api,
    target: { key: 'stand-in#ws', label: 'stand-in', workspaceId: 'ws' },
    config: parseConfig({
      callbackSettleSeconds: settle,
      destinations: destinations.map((p) => ({ path: p })),
    }),
    createUploader: bucket.create,
    backoff: { baseMs: 20, capMs: 100 },
  });
  const engine = lanes.engine;
  const states: string[] = [];
  engine.on('state', (c: RunStateChange) => states.push(`${c.from.name}>${c.to.name}`));
  return { queue, engine, bucket, states, lanes };
}

describe('the engine, alone', () => {
  it('moves a file hash -> fast-upload -> upload -> callback, each step before the next, and says so', async () => {
    const s = standIn();
    const { queue, engine, bucket, states } = engineFor(s);
    const file = photo('DJI_0001.JPG');
    const outcomes: string[] = [];
    engine.on('file', (e) => outcomes.push(e.outcome));
    await engine.scan(folderSource(card));
    await engine.run({ mode: 'until-idle' });
    const fp = md5(fs.readFileSync(file)).slice(0, 4);
    expect(s.calls).toEqual([`fast-upload ${fp}`, 'sts', 'put DJI_0001.JPG', `callback ${fp}`]);
    expect(outcomes).toEqual(['uploaded']);
    expect(states).toEqual(['idle>syncing', 'syncing>idle']);
    const [row] = queue.list();
    expect(row).toMatchObject({ state: 'done', outcome: 'uploaded', verified: { checksum: 'match' } });
    expect([...bucket.objects.values()][0]!.equals(fs.readFileSync(file))).toBe(true);
    engine.close();
    queue.close();
  });

  it('a small file is resolved (realpath) only where it is read: its upload from the kept bytes checks only its version', async () => {
    const s = standIn();
    const { queue, engine } = engineFor(s);
    for (let i = 1; i <= 5; i++) photo(`DJI_000${i}.JPG`);
    await engine.scan(folderSource(card));
    // Counted on the real fs module (every call still goes through): each file once, when it is read,
    // and its card's root once for all of them.
    const realpath = vi.spyOn(fsp, 'realpath');
    try {
      await engine.run({ mode: 'until-idle' });
      const onCard = realpath.mock.calls.filter(([p]) => String(p).startsWith(card));
      expect(queue.list().map((r) => r.state)).toEqual(Array(5).fill('done'));
      expect(onCard).toHaveLength(5 + 1);
    } finally {
      realpath.mockRestore();
      engine.close();
      queue.close();
    }
  });

  it('sends nothing for content the server holds, and a copy of it waits for the first, then asks', async () => {
    const s = standIn();
    const { queue, engine } = engineFor(s);
    photo('DJI_0001.JPG', 'same bytes');
    photo('DJI_0002.JPG', 'same bytes');
    s.known.add(md5('same bytes'));
    await engine.scan(folderSource(card));
    await engine.run({ mode: 'until-idle' });
    expect(s.calls.filter((c) => c.startsWith('put') || c.startsWith('callback'))).toEqual([]);
    expect(queue.list().map((r) => r.state === 'done' && r.outcome)).toEqual([
      'fast-uploaded',
      'fast-uploaded',
    ]);
    engine.close();
    queue.close();
  });

  it('after a lost callback answer it asks before posting again, no sooner than the settle time', async () => {
    const s = standIn();
    const { queue, engine } = engineFor(s, 1);
    photo('DJI_0001.JPG');
    let lost = 0;
    s.script.callback = () => (lost++ === 0 ? new DmsError('timeout', 'no answer in time') : null);
    await engine.scan(folderSource(card));
    const started = Date.now();
    await engine.run({ mode: 'until-idle' });
    const callbacks = s.calls.filter((c) => c.startsWith('callback'));
    const afterLoss = s.calls.slice(s.calls.indexOf(callbacks[0]!) + 1);
    // The server recorded the first one: the check finds it, and nothing is posted twice.
    expect(callbacks).toHaveLength(1);
    expect(afterLoss[0]).toMatch(/^fast-upload/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(queue.list()[0]).toMatchObject({ state: 'done', outcome: 'uploaded' });
    engine.close();
    queue.close();
  });

  it('a refused sign-in stops everything at once (auth-required), and a one-shot run returns', async () => {
    const s = standIn();
    const { queue, engine, states } = engineFor(s);
    for (let i = 1; i <= 5; i++) photo(`DJI_000${i}.JPG`);
    s.script.fastUpload = () => new DmsError('auth', 'token revoked');
    await engine.scan(folderSource(card));
    await engine.run({ mode: 'until-idle' });
    expect(engine.state).toBe('auth-required');
    expect(engine.error?.message).toBe('token revoked');
    expect(states).toContain('syncing>auth-required');
    // Nothing was failed or counted against the files: they wait for the sign-in.
    expect(queue.counts().failed.files).toBe(0);
    // Each file asked once at most (those already on their way), none again after the refusal.
    expect(s.calls.filter((c) => c.startsWith('fast-upload')).length).toBeLessThanOrEqual(5);
    expect(s.calls.some((c) => c.startsWith('put') || c.startsWith('callback'))).toBe(false);
    s.script.fastUpload = () => null;
    engine.resume();
    await engine.run({ mode: 'until-idle' });
    expect(queue.counts().done.files).toBe(5);
    engine.close();
    queue.close();
  });

  it('the server failing as a whole puts the run offline until the first file gets through', async () => {
    const s = standIn();
    const { queue, engine, states } = engineFor(s);
    photo('DJI_0001.JPG');
    let failures = 2;
    s.script.fastUpload = () => (failures-- > 0 ? new DmsError('server', 'HTTP 502') : null);
    await engine.scan(folderSource(card));
    await engine.run({ mode: 'until-idle' });
    expect(states.slice(0, 3)).toEqual(['idle>syncing', 'syncing>offline', 'offline>offline']);
    expect(states).toContain('offline>syncing');
    expect(queue.counts().done.files).toBe(1);
    engine.close();
    queue.close();
  });

  it('a file the server refuses is failed with its words, and the rest goes on', async () => {
    const s = standIn();
    const { queue, engine } = engineFor(s);
    photo('DJI_0001.JPG', 'good');
    photo('DJI_0002.JPG', 'bad');
    s.script.fastUpload = (fp) =>
      fp === md5('bad') ? { known: false, code: 400001, message: 'payload_model_key is invalid' } : null;
    await engine.scan(folderSource(card));
    await engine.run({ mode: 'until-idle' });
    const failed = queue.list({ states: ['failed'] });
    expect(failed).toHaveLength(1);
    expect(failed[0]!.errorMessage).toContain('payload_model_key is invalid');
    expect(queue.counts().done.files).toBe(1);
    engine.close();
    queue.close();
  });

  it('a pause stops the work and keeps it: nothing is failed, resume finishes it', async () => {
    const s = standIn();
    const { queue, engine, states } = engineFor(s);
    photo('DJI_0001.JPG');
    // The server takes its time to answer: the pause lands while the question is out.
    let answer: () => void = () => undefined;
    const slow = new Promise<void>((r) => (answer = r));
    let asked = 0;
    s.script.fastUpload = () => null;
    const fastUpload = s.api.fastUpload.bind(s.api);
    Object.assign(s.api, {
      fastUpload: async (...args: Parameters<ApiClient['fastUpload']>) => {
        if (asked++ === 0) await slow;
        // As the real client does: a request whose signal was aborted fails.
        args[1]?.signal?.throwIfAborted();
        return fastUpload(...args);
      },
    });
    const stop = new AbortController();
    await engine.scan(folderSource(card));
    const running = engine.run({ mode: 'forever', signal: stop.signal });
    while (asked === 0) await new Promise((r) => setTimeout(r, 5));
    engine.pause();
    answer();
    await new Promise((r) => setTimeout(r, 100));
    expect(engine.state).toBe('paused');
    expect(queue.counts().failed.files + queue.counts().done.files).toBe(0);
    engine.resume();
    while (queue.counts().done.files === 0) await new Promise((r) => setTimeout(r, 10));
    expect(states).toContain('syncing>paused');
    expect(states).toContain('paused>idle');
    stop.abort();
    await running;
    engine.close();
    queue.close();
  });

  it('with local copies: the card is copied first; pulled then, its files go on from the copies, none waits for it', async () => {
    const s = standIn();
    const ssd = path.join(dir, 'SSD');
    fs.mkdirSync(ssd);
    const { queue, engine, lanes } = engineFor(s, 0, [ssd]);
    photo('DJI_0001.JPG', 'one');
    photo('DJI_0002.JPG', 'two');
    // The server holds every question until the test lets go: the uplink is "slow".
    let letGo: () => void = () => undefined;
    const held = new Promise<void>((r) => (letGo = r));
    const fastUpload = s.api.fastUpload.bind(s.api);
    Object.assign(s.api, {
      fastUpload: async (...args: Parameters<ApiClient['fastUpload']>) => {
        await held;
        return fastUpload(...args);
      },
    });
    const copied = new Promise<string>((r) => lanes.copyLane.once('copied', ({ sourceId }) => r(sourceId)));
    const source = folderSource(card);
    await engine.scan(source);
    const stop = new AbortController();
    // The copy lane beside the engine, as the agent runs them.
    const running = lanes.run({ mode: 'forever', signal: stop.signal });
    expect(await copied).toBe(source.sourceId);
    // The card goes away: nothing is parked (each file has a verified copy), and the card is gone indeed.
    fs.rmSync(card, { recursive: true });
    expect(engine.sourceRemoved(source.sourceId, 'card pulled')).toBe(0);
    letGo();
    while (queue.counts().done.files < 2) await new Promise((r) => setTimeout(r, 10));
    expect(queue.counts()['waiting-for-source'].files).toBe(0);
    // Each file sent once (the two go up side by side: in either order).
    expect(s.calls.filter((c) => c.startsWith('put')).sort()).toEqual([
      'put DJI_0001.JPG',
      'put DJI_0002.JPG',
    ]);
    stop.abort();
    await running;
    engine.close();
    queue.close();
  });
});
