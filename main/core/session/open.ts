/**
 * One way to open a session on a state folder, for the CLI and the app:
 * take the one-agent lock, open (or rebuild) the queue, resolve the server,
 * token and CA, and bind the queue to that target. Whatever fails on the way
 * undoes what was done before it.
 */
import type { Config } from '../config.js';
import { statePaths, type StatePaths } from '../paths.js';
import { acquireAgentLock, type AgentLock } from '../queue/lock.js';
import { openQueue } from '../queue/open.js';
import type { Queue } from '../queue/queue.js';
import { resolveConnection, type Connection, type ConnectionInputs } from './connection.js';

export interface SessionOptions extends Omit<ConnectionInputs, 'config'> {
  stateDir: string;
  config: Config;
  /** How the lock's holder is named in the refusal ("Drone Media Sync", "the desktop app"). */
  what?: string;
  /** How long a busy lock is waited for (blocking); the app retries by itself and waits 0. */
  lockWaitMs?: number;
}

export interface Session {
  paths: StatePaths;
  queue: Queue;
  /** Set when the queue was damaged and rebuilt: tell the user. */
  notice: string | null;
  connection: Connection;
  /** Resolves the server again (settings or sign-in changed) and rebinds the queue. */
  reconnect(config: Config): Promise<Connection>;
  close(): void;
}

export async function openSession(o: SessionOptions): Promise<Session> {
  const paths = statePaths(o.stateDir);
  const lock: AgentLock = acquireAgentLock(paths.root, o.what, o.lockWaitMs);
  let queue: Queue | null = null;
  try {
    const opened = openQueue(paths.queue);
    queue = opened.queue;
    const q = queue;
    const connect = async (config: Config): Promise<Connection> => {
      const c = await resolveConnection({ ...o, config });
      if (c.kind !== 'none') q.bindTarget(c.target);
      return c;
    };
    const session: Session = {
      paths,
      queue: q,
      notice: opened.notice,
      connection: await connect(o.config),
      reconnect: async (config) => (session.connection = await connect(config)),
      close: () => {
        q.close();
        lock.release();
      },
    };
    return session;
  } catch (err) {
    queue?.close();
    lock.release();
    throw err;
  }
}
