import pino from 'pino';

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

export function createLogger(
  opts: { level?: string; destination?: pino.DestinationStream | number } = {},
): Logger {
  const dest = opts.destination ?? 2; // stderr: stdout belongs to the CLI's output
  return pino(
    {
      level: opts.level ?? process.env.DMS_LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[secret]' },
      base: undefined,
    },
    typeof dest === 'number' ? pino.destination({ fd: dest, sync: true }) : dest,
  );
}

export const silentLogger: Logger = pino({ level: 'silent' });
