import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { QueueLockedError } from '../../main/core/errors.js';
import { acquireAgentLock } from '../../main/core/queue/lock.js';
import { openQueue } from '../../main/core/queue/open.js';

// The other agent is a real process running the built lock module (npm test builds first).
const BUILT_LOCK = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../dist/main/core/queue/lock.js',
);

let dir: string;
const children: ChildProcess[] = [];
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-lock-'));
  expect(fs.existsSync(BUILT_LOCK), `${BUILT_LOCK} is missing: run npm run build`).toBe(true);
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A script that takes the lock of the folder in argv[2], says so, and keeps running. */
function holdScript(): string {
  const file = path.join(dir, 'hold.mjs');
  fs.writeFileSync(
    file,
    `const m = await import(${JSON.stringify(BUILT_LOCK)});\nm.acquireAgentLock(process.argv[2]);\nconsole.log('held ' + process.pid);\nsetInterval(() => {}, 1000);\n`,
  );
  return file;
}

/** Starts `command` and resolves with the pid it prints once it holds the lock. */
async function holder(command: string, args: string[]): Promise<number> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const give = setTimeout(() => reject(new Error(`no lock holder after 10 s: ${out}`)), 10_000);
    const read = (b: Buffer): void => {
      out += String(b);
      const m = /held (\d+)/.exec(out);
      if (m) {
        clearTimeout(give);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
  });
}

function procState(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[0] ?? null;
  } catch {
    return null;
  }
}

it('refuses a second agent while another process holds the queue, naming it', async () => {
  const pid = await holder(process.execPath, [holdScript(), dir]);
  expect(() => acquireAgentLock(dir, 'Drone Media Sync', 0)).toThrow(QueueLockedError);
  expect(() => acquireAgentLock(dir, 'Drone Media Sync', 0)).toThrow(
    new RegExp(`process ${pid}\\) is already syncing`),
  );
});

it.runIf(process.platform === 'linux')(
  'takes the lock at once after SIGKILL, while the killed agent is still an unreaped zombie',
  async () => {
    // sh starts the agent in the background, prints its pid and becomes `sleep`,
    // which never reaps it: after SIGKILL it stays a zombie, as a crashed agent
    // under a slow init does. The old pid lock took it for alive and refused.
    const pid = await holder('sh', [
      '-c',
      '"$0" "$1" "$2" & exec sleep 60',
      process.execPath,
      holdScript(),
      dir,
    ]);
    expect(() => acquireAgentLock(dir)).toThrow(QueueLockedError);
    process.kill(pid, 'SIGKILL');
    const until = Date.now() + 10_000;
    while (procState(pid) !== 'Z' && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(procState(pid)).toBe('Z');
    const lock = acquireAgentLock(dir);
    lock.release();
  },
);

it('is immune to pid reuse: a live pid in an old lock file does not hold the queue', () => {
  // The pid of a process that is certainly alive (this one's parent), as the old lock file held it.
  fs.writeFileSync(path.join(dir, 'agent.lock'), `${process.ppid}\n`);
  const lock = acquireAgentLock(dir);
  expect(fs.existsSync(path.join(dir, 'agent.lock'))).toBe(false);
  lock.release();
});

it('refuses a second lock in the same process until the first is released', () => {
  const first = acquireAgentLock(dir);
  expect(() => acquireAgentLock(dir, 'Drone Media Sync', 0)).toThrow(QueueLockedError);
  first.release();
  acquireAgentLock(dir).release();
});

it('names only a live holder: a released lock takes its pid out of the owner file', () => {
  const owner = path.join(dir, 'queue.lock.owner');
  const lock = acquireAgentLock(dir);
  expect(fs.readFileSync(owner, 'utf8').trim()).toBe(String(process.pid));
  lock.release();
  // A \`status\` that looked, or an agent that ended, must not be named as the holder later.
  expect(fs.existsSync(owner)).toBe(false);
  // Another process's pid written since is left alone.
  const again = acquireAgentLock(dir);
  fs.writeFileSync(owner, '999999\n');
  again.release();
  expect(fs.readFileSync(owner, 'utf8').trim()).toBe('999999');
});

it('keeps a damaged queue aside, says so, and starts a fresh one', () => {
  const file = path.join(dir, 'queue.db');
  fs.writeFileSync(file, Buffer.alloc(8192, 0x41)); // truncated / corrupt file
  const { queue, notice } = openQueue(file, Date.UTC(2026, 0, 2, 3, 4, 5));
  expect(notice).toMatch(
    /damaged.*kept as .*queue\.db\.damaged-2026-01-02T03-04-05-000Z.*will not be sent twice/,
  );
  const kept = fs.readdirSync(dir).filter((f) => f.startsWith('queue.db.damaged-'));
  expect(kept).toHaveLength(1);
  expect(fs.readFileSync(path.join(dir, kept[0]!)).equals(Buffer.alloc(8192, 0x41))).toBe(true);
  queue.bindTarget({ key: 'k', label: 'l', workspaceId: 'w' });
  expect(queue.counts().done.files).toBe(0);
  queue.close();
  // a healthy queue opens without a notice
  expect(openQueue(file).notice).toBeNull();
});
