import pino from 'pino';
import { safeJsonText, visible } from '../shared/visible.js';

/**
 * Keys whose values must never reach a log line, wherever they appear:
 * the server token and the temporary bucket credentials.
 */
export const SECRET_KEYS = [
  'token',
  'x-auth-token',
  'access_token',
  'accessKeySecret',
  'access_key_secret',
  'secretAccessKey',
  'security_token',
  'sessionToken',
  'stsToken',
  'password',
  'authorization',
];

export const REDACT_PATHS = SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`, `headers["${k}"]`]);

export type Logger = pino.Logger;

/**
 * Every log line as it is written: file names and server messages logged
 * inside stay the same JSON values, but the C1 controls, bidi overrides and
 * other characters JSON.stringify leaves raw become \u escapes, so a log
 * shown in a terminal (stderr, `tail -f`) cannot be forged or recoloured.
 */
export const LOG_HOOKS = { streamWrite: safeJsonText };

export function createLogger(
  opts: { level?: string; destination?: pino.DestinationStream | number } = {},
): Logger {
  const dest = opts.destination ?? 2; // stderr: stdout belongs to the CLI's output
  return pino(
    {
      level: opts.level ?? process.env.DMS_LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[secret]' },
      base: undefined,
      hooks: LOG_HOOKS,
    },
    typeof dest === 'number' ? pino.destination({ fd: dest, sync: true }) : dest,
  );
}

/**
 * For a person at a terminal: warnings and errors as plain lines on stderr
 * ("warning: The manifest of … could not be uploaded: …"), made visible-safe;
 * no JSON, no debug chatter. The JSON log (createLogger) is for -v and
 * DMS_LOG_LEVEL, and for the agent's log file (log-file.ts).
 */
export function createPlainLogger(
  level = 'warn',
  out: NodeJS.WritableStream = process.stderr,
  /** Lines the caller says itself, from the events they come with: not printed twice. */
  skip: (entry: Record<string, unknown>) => boolean = () => false,
): Logger {
  return pino(
    { level, redact: { paths: REDACT_PATHS, censor: '[secret]' }, base: undefined },
    plainStream(out, skip),
  );
}

/** The stream under createPlainLogger: each JSON log line as one plain, visible-safe line. */
export function plainStream(
  out: NodeJS.WritableStream,
  skip: (entry: Record<string, unknown>) => boolean = () => false,
): { write(line: string): void } {
  const words: Record<number, string> = { 40: 'warning', 50: 'error', 60: 'error' };
  return {
    write(line: string): void {
      try {
        const o = JSON.parse(line) as { level?: number; msg?: unknown };
        if (skip(o)) return;
        const msg = typeof o.msg === 'string' ? o.msg : JSON.stringify(o.msg ?? '');
        out.write(`${words[o.level ?? 40] ?? 'note'}: ${visible(msg)}\n`);
      } catch {
        out.write(visible(line.trimEnd()) + '\n');
      }
    },
  };
}

export const silentLogger: Logger = pino({ level: 'silent' });
