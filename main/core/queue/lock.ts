import fs from 'node:fs';
import path from 'node:path';
import { DmsError } from '../errors.js';

export interface AgentLock {
  release(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

/**
 * One agent per queue. Two agents draining the same queue would upload and
 * post callbacks for the same files twice, and servers in the wild break on
 * duplicate callbacks. A lock file holds the owner's pid; a lock left by a
 * process that no longer runs (killed, power loss) is taken over.
 */
export function acquireAgentLock(stateDir: string, what = 'Drone Media Sync'): AgentLock {
  fs.mkdirSync(stateDir, { recursive: true });
  const file = path.join(stateDir, 'agent.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      fs.writeSync(fd, `${process.pid}\n`);
      fs.closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return { release };
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new DmsError(
          'invalid-input',
          `Another ${what} (process ${pid}) is already syncing with this queue (${stateDir}). Close it first; "drone-media-sync status" works alongside it.`,
          { retryable: false },
        );
      }
      fs.rmSync(file, { force: true }); // stale: its owner is gone
    }
  }
  throw new DmsError('invalid-input', `Could not take the queue lock in ${stateDir}.`, { retryable: false });
}
