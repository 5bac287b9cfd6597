import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { DmsError, QueueLockedError } from '../errors.js';

export interface AgentLock {
  release(): void;
}

/** The lock file: an SQLite database held open with an exclusive lock. */
export const LOCK_FILE = 'queue.lock';
/** Who holds it, for the message only (never trusted to decide anything). */
const OWNER_FILE = 'queue.lock.owner';
/** The pid file of versions before the SQLite lock: removed when seen. */
const OLD_LOCK_FILE = 'agent.lock';

function busy(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

function owner(stateDir: string): string {
  try {
    const pid = Number.parseInt(fs.readFileSync(path.join(stateDir, OWNER_FILE), 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? ` (process ${pid})` : '';
  } catch {
    return '';
  }
}

/**
 * One agent per queue: two agents draining the same queue would upload and
 * post callbacks for the same files twice, and servers in the wild break on
 * duplicate callbacks.
 *
 * The lock is held by the operating system, not by a pid in a file: an SQLite
 * database in EXCLUSIVE locking mode keeps its file lock for as long as the
 * connection is open. The kernel drops it when the process dies (SIGKILL,
 * crash, power loss), before the process is even reaped, so a restart right
 * after a crash is never refused and a reused pid can never hold it. SQLite
 * also refuses a second connection from the same process. `waitMs`: how
 * long a busy lock is waited for before the refusal.
 */
export function acquireAgentLock(stateDir: string, what = 'Drone Media Sync', waitMs = 1000): AgentLock {
  fs.mkdirSync(stateDir, { recursive: true });
  fs.rmSync(path.join(stateDir, OLD_LOCK_FILE), { force: true });
  const file = path.join(stateDir, LOCK_FILE);
  let db: Database.Database;
  try {
    // A process killed a moment ago may still be closing its files (its
    // other threads exit just after the main one): wait briefly for it. This
    // blocks the event loop, so the app (which retries on its own) waits 0.
    db = new Database(file, { timeout: waitMs });
  } catch (err) {
    throw new DmsError(
      'invalid-input',
      `The queue lock ${file} cannot be opened: ${(err as Error).message}`,
      { cause: err, retryable: false },
    );
  }
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // A write takes the lock; EXCLUSIVE mode keeps it after the commit.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); DELETE FROM holder; COMMIT;');
  } catch (err) {
    db.close();
    if (busy(err)) {
      throw new QueueLockedError(
        `Another ${what}${owner(stateDir)} is already syncing with this queue (${stateDir}). Close it first; "drone-media-sync status" works alongside it.`,
        err,
      );
    }
    throw new DmsError('invalid-input', `The queue lock ${file} cannot be taken: ${(err as Error).message}`, {
      cause: err,
      retryable: false,
    });
  }
  try {
    fs.writeFileSync(path.join(stateDir, OWNER_FILE), `${process.pid}\n`, { mode: 0o600 });
  } catch {
    // only used in the message above
  }
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    process.off('exit', release);
    // The owner file names a live holder only: a released lock (a `status` that looked, an agent that
    // ended) takes its pid away, unless another process has taken the lock and written its own since.
    try {
      const ownerFile = path.join(stateDir, OWNER_FILE);
      if (Number.parseInt(fs.readFileSync(ownerFile, 'utf8'), 10) === process.pid)
        fs.rmSync(ownerFile, { force: true });
    } catch {
      // only used in the message above
    }
    db.close();
  };
  process.once('exit', release);
  return { release };
}
