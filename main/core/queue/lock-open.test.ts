import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { acquireAgentLock } from './lock.js';
import { openQueue } from './open.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-lock-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

it('refuses a second agent on the same queue while the first runs, and takes over a dead one', async () => {
  // A real other process holds the lock.
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
  await new Promise((r) => child.once('spawn', r));
  fs.writeFileSync(path.join(dir, 'agent.lock'), `${child.pid}\n`);
  expect(() => acquireAgentLock(dir)).toThrow(new RegExp(`process ${child.pid}\\) is already syncing`));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  // Its owner is gone (as after a crash): the lock is taken over.
  const lock = acquireAgentLock(dir);
  expect(fs.readFileSync(path.join(dir, 'agent.lock'), 'utf8').trim()).toBe(String(process.pid));
  lock.release();
  expect(fs.existsSync(path.join(dir, 'agent.lock'))).toBe(false);
});

it('keeps a damaged queue aside, says so, and starts a fresh one', () => {
  const file = path.join(dir, 'queue.db');
  fs.writeFileSync(file, Buffer.alloc(8192, 0x41)); // truncated / corrupt file
  const { queue, notice } = openQueue(file, Date.UTC(2026, 0, 2, 3, 4, 5));
  expect(notice).toMatch(/damaged.*kept as .*queue\.db\.damaged-2026-01-02T03-04-05-000Z.*will not be sent twice/);
  const kept = fs.readdirSync(dir).filter((f) => f.startsWith('queue.db.damaged-'));
  expect(kept).toHaveLength(1);
  expect(fs.readFileSync(path.join(dir, kept[0]!)).equals(Buffer.alloc(8192, 0x41))).toBe(true);
  expect(queue.counts().done.files).toBe(0);
  queue.close();
  // a healthy queue opens without a notice
  expect(openQueue(file).notice).toBeNull();
});
