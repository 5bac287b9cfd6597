import { syncLanes } from './peers.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { ApiClient } from '../api/client.js';
import { parseConfig } from '../config.js';
import { Queue } from '../queue/queue.js';
import { folderSource } from '../sources/source.js';

// The dispatcher against a real SQLite queue and real files; the server is a
// stand-in whose fast-upload answers "known" in bursts, so that many rows
// finish in the same tick and the dispatcher refills many slots at once (the
// case where its list of due ids runs dry halfway through a refill).
let dir: string | undefined;
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('hands every row to exactly one worker, also when refills empty the listed ids', async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-dispatch-'));
  const card = path.join(dir, 'card', 'DCIM', '100MEDIA');
  fs.mkdirSync(card, { recursive: true });
  const n = 203;
  for (let i = 0; i < n; i++)
    fs.writeFileSync(path.join(card, `DJI_${String(i).padStart(4, '0')}.JPG`), `photo ${i}`);
  const calls = new Map<string, number>();
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => (release = r));
  // Opens the gate every 15 ms: whoever waits at it finishes together.
  const timer = setInterval(() => {
    release();
    gate = new Promise<void>((r) => (release = r));
  }, 15);
  const api = {
    fastUpload: async (body: { fingerprint: string }) => {
      calls.set(body.fingerprint, (calls.get(body.fingerprint) ?? 0) + 1);
      await gate;
      return { known: true, code: 0, message: 'success' };
    },
  } as unknown as ApiClient;
  const queue = new Queue(path.join(dir, 'queue.db'));
  const target = { key: 'stand-in#ws', label: 'stand-in', workspaceId: 'ws' };
  const engine = syncLanes({
    queue,
    api,
    target,
    config: parseConfig({}),
    hashConcurrency: 8,
    apiConcurrency: 64,
  }).engine;
  try {
    await engine.scan(folderSource(path.join(dir, 'card')));
    await engine.run({ mode: 'until-idle' });
  } finally {
    clearInterval(timer);
    engine.close();
  }
  expect(queue.counts().done.files).toBe(n);
  queue.close();
  expect(calls.size).toBe(n);
  expect([...calls.values()].filter((c) => c !== 1)).toEqual([]);
});
