import pino from 'pino';
import { safeJsonText } from '../shared/visible.js';

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

export const silentLogger: Logger = pino({ level: 'silent' });
