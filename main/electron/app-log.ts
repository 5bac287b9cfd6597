/**
 * The desktop app's log: JSON lines in a rotating file in the OS log folder
 * ("Open log folder" in the tray), with the core's redaction so a token or
 * bucket key can never be written even if some object carrying one is logged.
 * A log folder that cannot be written never stops the app: it logs to stderr.
 */
import { once } from 'node:events';
import path from 'node:path';
import pino from 'pino';
import pinoRoll from 'pino-roll';
import { createLogger, LOG_HOOKS, REDACT_PATHS, type Logger } from '../core/log.js';

export interface AppLog {
  logger: Logger;
  /** Writes what is buffered (before quitting). */
  flush: () => void;
}

export async function createAppLogger(dir: string, opts: { level?: string } = {}): Promise<AppLog> {
  const level = opts.level ?? process.env.DMS_LOG_LEVEL ?? 'info';
  let stream: Awaited<ReturnType<typeof pinoRoll>>;
  try {
    stream = await pinoRoll({
      file: path.join(dir, 'drone-media-sync'),
      extension: '.log',
      frequency: 'daily',
      size: '10m',
      // A week or so of field use; support asks for these files.
      limit: { count: 7 },
      mkdir: true,
    });
    // Open before the first line: a crash right after start still leaves its lines on disk.
    await once(stream, 'ready');
  } catch (err) {
    const logger = createLogger({ level });
    logger.warn({ dir, err: (err as Error).message }, 'log folder not writable: logging to stderr');
    return { logger, flush: () => undefined };
  }
  stream.on('error', (err: Error) => process.stderr.write(`log file error: ${err.message}\n`));
  const logger = pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[secret]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      hooks: LOG_HOOKS,
    },
    stream,
  );
  return {
    logger,
    flush: () => {
      try {
        stream.flushSync();
      } catch {
        // already closed: nothing buffered to lose
      }
    },
  };
}
