import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { DmsError } from '../../core/errors.js';
import { createLogger } from '../../core/log.js';
import { statePaths } from '../../core/paths.js';
import {
  DatabaseStartError,
  InstanceConflictError,
  startService,
  validateDatabaseConfig,
  validateExternalBucketConfig,
  type DatabaseConfig,
  type ExternalBucketConfig,
} from '../../service/index.js';
import { PILOT_PASSWORD_FILE } from '../../service/bootstrap.js';
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
}

/**
 * `serve`: the reference service. Prints exactly one JSON line on stdout when
 * ready (scripts and tests read it), then logs to stderr; SIGTERM/SIGINT stop it.
 */
export async function serveCommand(flags: ServeFlags): Promise<void> {
  const dataDir = flags.data ? path.resolve(flags.data) : statePaths(resolveStateDir(flags)).service;
  requireWritable(dataDir, "the service's data");
  const ports = portsToUse(flags.port, savedPorts(dataDir));
  const logger = createLogger({ level: process.env.DMS_LOG_LEVEL ?? 'info' });
  const externalBucket = flags.bucketConfig ? readBucketConfig(flags.bucketConfig, logger) : undefined;
  const database = readDatabaseFlag(flags.database, logger);
  const svc = await startService({
    database,
    host: flags.host,
    port: ports.api,
    bucketPort: ports.bucket,
    dataDir,
    logger,
    ...(flags.stsExpire ? { stsExpireSeconds: Number(flags.stsExpire) } : {}),
    ...(externalBucket ? { externalBucket } : {}),
  }).catch((err: unknown) => {
    // Said as it is: the operator must act (start PostgreSQL, fix the password, stop the other instance).
    if (err instanceof DatabaseStartError || err instanceof InstanceConflictError) {
      throw new DmsError('invalid-input', err.message, { cause: err, retryable: false, plain: err.message });
    }
    throw portTakenError(err, ports, flags.port !== undefined);
  });
  const bucketPort = externalBucket ? undefined : Number(new URL(svc.bucket.endpoint).port);
  savePorts(dataDir, {
    api: Number(new URL(svc.baseUrl).port),
    ...(bucketPort ? { bucket: bucketPort } : {}),
  });
  // Every start, for a person (the JSON line above is for scripts): where to sign in, and with what.
  const passwordFile = path.join(dataDir, PILOT_PASSWORD_FILE);
  // Without --data, the built-in local service's own data (issue 30): said, so nobody takes it for a new, empty server.
  if (!flags.data)
    process.stderr.write(
      `This serves the built-in local service's media and workspace (${dataDir}): cards synced without --server are already here. For a server of its own, give it --data DIR.\n`,
    );
  process.stderr.write(
    `Serving ${svc.baseUrl} (workspace ${svc.workspaceId}). Sign in with: drone-media-sync login --server ${svc.baseUrl} --username pilot` +
      (fs.existsSync(passwordFile) ? ` (the password is in ${passwordFile})` : '') +
      '. Stop with Ctrl+C.\n',
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
