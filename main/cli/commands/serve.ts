import fs from 'node:fs';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { DmsError } from '../../core/errors.js';
import { createLogger, REDACT_PATHS } from '../../core/log.js';
import { statePaths } from '../../core/paths.js';
import {
  BucketCredentialsError,
  DatabaseStartError,
  describeDatabase,
  InstanceConflictError,
  resetUserPassword,
  SchemaTooNewError,
  startService,
  validateDatabaseConfig,
  validateExternalBucketConfig,
  type DatabaseConfig,
  type ExternalBucketConfig,
} from '../../service/index.js';
import { PILOT_PASSWORD_FILE } from '../../service/bootstrap.js';
import { DB_FILE } from '../../service/db.js';
import { visible } from '../../shared/visible.js';
import { writeLines } from '../output.js';
import { resolveStateDir } from '../context.js';
import { portsToUse, portTakenError, savedPorts, savePorts } from '../serve-ports.js';
import { requireWritable } from '../state-access.js';

export interface ServeFlags {
  host: string;
  /** Unset: the port used last time (serve-ports.ts). */
  port?: string;
  data?: string;
  state?: string;
  stsExpire?: string;
  bucketConfig?: string;
  database?: string;
  verbose?: boolean;
}

/**
 * `serve`: the reference service. Prints exactly one JSON line on stdout when
 * ready (scripts and tests read it), then logs to stderr; SIGTERM/SIGINT stop it.
 */
export async function serveCommand(flags: ServeFlags): Promise<void> {
  const dataDir = dataDirOf(flags);
  requireWritable(dataDir, "the service's data");
  const ports = portsToUse(flags.port, savedPorts(dataDir));
  const stsExpireSeconds = readStsExpire(flags.stsExpire);
  const logger = serveLogger(flags);
  const externalBucket = flags.bucketConfig ? readBucketConfig(flags.bucketConfig, logger) : undefined;
  const database = readDatabaseFlag(flags.database, logger);
  const svc = await startService({
    database,
    host: flags.host,
    port: ports.api,
    bucketPort: ports.bucket,
    dataDir,
    logger,
    ...(stsExpireSeconds !== undefined ? { stsExpireSeconds } : {}),
    ...(externalBucket ? { externalBucket } : {}),
  }).catch((err: unknown) => {
    // Said as it is: the operator must act (start PostgreSQL, fix the password, stop the other instance).
    if (
      err instanceof DatabaseStartError ||
      err instanceof InstanceConflictError ||
      err instanceof SchemaTooNewError ||
      err instanceof BucketCredentialsError
    ) {
      throw new DmsError('invalid-input', err.message, { cause: err, retryable: false, plain: err.message });
    }
    throw startFailure(portTakenError(err, ports, flags.port !== undefined), dataDir);
  });
  const bucketPort = externalBucket ? undefined : Number(new URL(svc.bucket.endpoint).port);
  try {
    savePorts(dataDir, {
      api: Number(new URL(svc.baseUrl).port),
      ...(bucketPort ? { bucket: bucketPort } : {}),
    });
  } catch (err) {
    await svc.close();
    throw startFailure(err, dataDir);
  }
  // Every start, for a person (the JSON line above is for scripts): where to sign in, and with what.
  const passwordFile = path.join(dataDir, PILOT_PASSWORD_FILE);
  // Without --data, the built-in local service's own data (issue 30): said, so nobody takes it for a new, empty server.
  if (!flags.data)
    process.stderr.write(
      `This serves the built-in local service's media and workspace (${dataDir}): cards synced without --server are already here. For a server of its own, give it --data DIR.\n`,
    );
  // The commands it names are written as the user runs them (`npx drone-media-sync …` in a checkout).
  writeLines(
    [
      `Serving ${svc.baseUrl} (workspace ${svc.workspaceId}). Sign in with: drone-media-sync login --server ${svc.baseUrl} --username pilot` +
        (fs.existsSync(passwordFile)
          ? ` (the password is in ${passwordFile})`
          : ` (its password is not in this data folder: another instance made it; for a new one run drone-media-sync serve reset-password pilot${sameDatabase(flags)})`) +
        '. Stop with Ctrl+C.',
    ],
    process.stderr,
  );
  process.stdout.write(
    JSON.stringify({ base_url: svc.baseUrl, workspace_id: svc.workspaceId, token: svc.token }) + '\n',
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  // Graceful: the load balancer sees /readyz fail, new requests get 503002, those in flight finish.
  logger.info('stopping: finishing the requests in flight, refusing new ones');
  await svc.drain();
  await svc.close();
}

/**
 * `serve reset-password USER`: a new random password for USER (pilot's in
 * `<data>/pilot-password`), the old one and its sign-ins revoked. With the
 * same --data/--state and --database as `serve`; running instances need no restart.
 */
export async function resetPasswordCommand(
  username: string,
  flags: Pick<ServeFlags, 'data' | 'state' | 'database'>,
): Promise<number> {
  const dataDir = dataDirOf(flags);
  requireWritable(dataDir, "the service's data");
  const database = readDatabaseFlag(flags.database);
  let file: string | null;
  try {
    file = await resetUserPassword(dataDir, username, database);
  } catch (err) {
    if (err instanceof DatabaseStartError || err instanceof SchemaTooNewError)
      throw new DmsError('invalid-input', err.message, { cause: err, retryable: false });
    throw startFailure(err, dataDir);
  }
  if (file === null) {
    throw new DmsError(
      'invalid-input',
      `The service has no user "${username}" in ${database.kind === 'sqlite' ? path.join(dataDir, DB_FILE) : describeDatabase(database.url)}. Check the name, --data and --database.`,
      { retryable: false },
    );
  }
  writeLines([
    `New password for "${username}" in ${file} (readable by you only). Its earlier password and sign-ins no longer work: sign in again with drone-media-sync login.`,
  ]);
  return 0;
}

function dataDirOf(flags: Pick<ServeFlags, 'data' | 'state'>): string {
  return flags.data ? path.resolve(flags.data) : statePaths(resolveStateDir(flags)).service;
}

/** The --data and --database words to repeat in a command the operator is told to run. */
function sameDatabase(flags: ServeFlags): string {
  return (
    (flags.data ? ` --data ${flags.data}` : '') + (flags.database ? ` --database ${flags.database}` : '')
  );
}

function readStsExpire(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new DmsError(
      'invalid-input',
      `--sts-expire ${value}: the lifetime of the bucket credentials is a whole number of seconds (for example 3600).`,
      { retryable: false },
    );
  return n;
}

/**
 * A failure to start (or to keep the data folder) in the service's words:
 * what could not be done with which file, and what to do. Left to the
 * generic handler, a missing file reads "was the card removed?".
 */
export function startFailure(err: unknown, dataDir: string): unknown {
  if (err instanceof DmsError) return err;
  const e = err as NodeJS.ErrnoException;
  const file = typeof e.path === 'string' ? e.path : dataDir;
  const code = typeof e.code === 'string' ? e.code : undefined;
  const say = (text: string) => new DmsError('invalid-input', text, { cause: err, retryable: false });
  switch (code) {
    case undefined:
      return say(
        `The service could not start: ${e instanceof Error ? e.message : String(err)}. Its data folder is ${dataDir}.`,
      );
    case 'ENOENT':
    case 'ENOTDIR':
      return say(
        `The service could not start: ${file} is not there or a part of its path is not a folder (${code}). Check --data ${dataDir}.`,
      );
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return say(
        `The service could not start: no permission to write ${file} (${code}). Give the service's user that folder, or choose another with --data.`,
      );
    case 'ENOSPC':
    case 'SQLITE_FULL':
      return say(
        `The service could not start: the disk holding ${dataDir} is full. Free some space, then start again.`,
      );
    default:
      return say(
        code.startsWith('SQLITE_')
          ? `The service's database file ${path.join(dataDir, DB_FILE)} failed (${code}): ${e.message}. Start again; if it persists, restore the file from a backup.`
          : `The service could not start (${code}): ${e.message}. Its data folder is ${dataDir}.`,
      );
  }
}

const LEVEL_WORDS: Record<number, string> = { 40: 'warning', 50: 'error', 60: 'error' };

/**
 * The service's log: JSON lines on stderr (-v: at debug level; DMS_LOG_LEVEL:
 * at that one) as a log collector reads them, and whenever stderr is not a
 * terminal; at a terminal, plain lines for a person: what it says, each
 * request as "GET /path 200 3 ms", warnings and errors named as such.
 */
function serveLogger(flags: ServeFlags): Logger {
  const level = flags.verbose ? 'debug' : (process.env.DMS_LOG_LEVEL ?? 'info');
  if (flags.verbose || process.env.DMS_LOG_LEVEL !== undefined || !process.stderr.isTTY)
    return createLogger({ level });
  return pino(
    { level, redact: { paths: REDACT_PATHS, censor: '[secret]' }, base: undefined },
    { write: (line: string) => process.stderr.write(plainLine(line)) },
  );
}

/** One JSON log line as a person reads it at a terminal. */
export function plainLine(json: string): string {
  try {
    const o = JSON.parse(json) as {
      level?: number;
      msg?: unknown;
      req?: { method?: string; url?: string };
      res?: { statusCode?: number };
      responseTime?: number;
      err?: { message?: string };
    };
    const word = LEVEL_WORDS[o.level ?? 30];
    let text = typeof o.msg === 'string' ? o.msg : JSON.stringify(o.msg ?? '');
    if (o.req && o.res)
      text = `${o.req.method ?? ''} ${o.req.url ?? ''} ${o.res.statusCode ?? ''} ${Math.round(o.responseTime ?? 0)} ms`;
    if (o.err?.message && !text.includes(o.err.message)) text += `: ${o.err.message}`;
    return visible(word ? `${word}: ${text}` : text) + '\n';
  } catch {
    return visible(json.trimEnd()) + '\n';
  }
}

/**
 * `--database`: absent or `sqlite` for the data dir's SQLite file; a
 * `postgres://user@host:port/db` URL without a password (PGPASSWORD or
 * ~/.pgpass gives it); or a JSON settings file `{url, password,
 * maxConnections}` that keeps the password off the command line.
 */
export function readDatabaseFlag(value: string | undefined, logger?: Logger): DatabaseConfig {
  if (value === undefined || value === 'sqlite') return { kind: 'sqlite' };
  if (/^postgres(ql)?:/.test(value)) {
    try {
      return validateDatabaseConfig({ url: value });
    } catch (err) {
      // The message names the field, never the value (it could hold a password).
      throw new DmsError(
        'invalid-input',
        `--database: ${(err as Error).message.replace(/^database: /, '')}`,
        {
          retryable: false,
        },
      );
    }
  }
  const json = readJsonSettings(value, 'database settings file');
  try {
    const config = validateDatabaseConfig(json);
    warnIfReadable(value, 'the database password', logger);
    return config;
  } catch (err) {
    throw new DmsError(
      'invalid-input',
      `The database settings file ${value} has a wrong setting: ${(err as Error).message.replace(/^database: /, '')}`,
      { retryable: false },
    );
  }
}

function readJsonSettings(file: string, what: string): unknown {
  const refuse = (why: string): DmsError =>
    new DmsError('invalid-input', `The ${what} ${file} ${why}`, { retryable: false });
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw refuse(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  try {
    return JSON.parse(text);
  } catch {
    // Not the parser's message: it may quote the file, secret included.
    throw refuse('is not valid JSON.');
  }
}

function warnIfReadable(file: string, secret: string, logger?: Logger): void {
  if (process.platform !== 'win32' && (fs.statSync(file).mode & 0o077) !== 0) {
    logger?.warn(`${file} holds ${secret} and other users can read it; run: chmod 600 ${file}`);
  }
}

/**
 * The external bucket's settings (README: "External bucket"), from a JSON
 * file so that its secret key never appears on a command line. Errors name
 * the file and the field, never a value.
 */
export function readBucketConfig(file: string, logger?: Logger): ExternalBucketConfig {
  const json = readJsonSettings(file, 'bucket settings file');
  let config: ExternalBucketConfig;
  try {
    config = validateExternalBucketConfig(json);
  } catch (err) {
    throw new DmsError(
      'invalid-input',
      `The bucket settings file ${file} has a wrong setting: ${(err as Error).message.replace(/^externalBucket: /, '')}`,
      { retryable: false },
    );
  }
  warnIfReadable(file, "the bucket's secret key", logger);
  return config;
}
