/**
 * The agent's log file: JSON lines in a rotating file in the OS log folder,
 * with the core's redaction so a token or bucket key can never be written
 * even if some object carrying one is logged. One file for every agent: the
 * desktop app ("Open log folder" in the tray) and the headless one (`watch`,
 * `npm start` without a display) write the same file, in the same folder
 * (docs/logs-and-reset.md). A log folder that cannot be written never stops
 * the agent: it logs to stderr.
 */
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type pinoRollOf from 'pino-roll';
import { createLogger, LOG_HOOKS, REDACT_PATHS, type Logger } from './log.js';
import { APP_DIR_NAME } from './paths.js';

export interface FileLog {
  logger: Logger;
  /** Where the lines go (the folder of `drone-media-sync.<n>.log`), or null when it could not be opened. */
  dir: string | null;
  /** Writes what is buffered (before quitting). */
  flush: () => void;
}

/**
 * The log folder of the app run from a checkout (Electron's `logs` path for
 * the name `drone-media-sync`), which the headless agent shares: not moved
 * by DMS_STATE_DIR, as the app's is not.
 */
export function agentLogDir(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  const home = os.homedir();
  if (platform === 'win32')
    return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), APP_DIR_NAME, 'logs');
  if (platform === 'darwin') return path.join(home, 'Library', 'Logs', APP_DIR_NAME);
  return path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), APP_DIR_NAME, 'logs');
}

/**
 * The log file in `dir`: a new one each day or every 10 MB, the last 7 kept.
 * `echo`: a second destination for the lines from its level up (the
 * headless agent's warnings on its terminal).
 */
export async function createFileLogger(
  dir: string,
  opts: { level?: string; echo?: { level: string; stream: pino.DestinationStream } } = {},
): Promise<FileLog> {
  const level = opts.level ?? process.env.DMS_LOG_LEVEL ?? 'info';
  let stream: Awaited<ReturnType<typeof pinoRollOf>>;
  try {
    // Loaded when a log file is made (the app, `watch`): pino-roll brings date-fns, 300 modules.
    const { default: pinoRoll } = await import('pino-roll');
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
    const logger = opts.echo
      ? pino(
          { level: opts.echo.level, redact: { paths: REDACT_PATHS, censor: '[secret]' } },
          opts.echo.stream,
        )
      : createLogger({ level });
    logger.warn(
      { dir, err: (err as Error).message },
      `The log folder ${dir} cannot be written: no log file.`,
    );
    return { logger, dir: null, flush: () => undefined };
  }
  stream.on('error', (err: Error) => process.stderr.write(`log file error: ${err.message}\n`));
  const destination = opts.echo
    ? pino.multistream([
        { level: level as pino.Level, stream },
        { level: opts.echo.level as pino.Level, stream: opts.echo.stream },
      ])
    : stream;
  const logger = pino(
    {
      level:
        opts.echo && pino.levels.values[opts.echo.level]! < pino.levels.values[level]!
          ? opts.echo.level
          : level,
      redact: { paths: REDACT_PATHS, censor: '[secret]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      hooks: LOG_HOOKS,
    },
    destination,
  );
  return {
    logger,
    dir,
    flush: () => {
      try {
        stream.flushSync();
      } catch {
        // already closed: nothing buffered to lose
      }
    },
  };
}
