/**
 * The desktop app's log: the agent's log file (core/log-file.ts) in the OS
 * log folder ("Open log folder" in the tray); the headless agent writes the
 * same file.
 */
import { createFileLogger } from '../core/log-file.js';
import type { Logger } from '../core/log.js';

export interface AppLog {
  logger: Logger;
  /** Writes what is buffered (before quitting). */
  flush: () => void;
}

export async function createAppLogger(dir: string, opts: { level?: string } = {}): Promise<AppLog> {
  const { logger, flush } = await createFileLogger(dir, opts);
  return { logger, flush };
}
