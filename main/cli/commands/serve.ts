import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { DmsError } from '../../core/errors.js';
import { createLogger } from '../../core/log.js';
import { statePaths } from '../../core/paths.js';
import {
  startService,
  validateExternalBucketConfig,
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
  const svc = await startService({
    host: flags.host,
    port: ports.api,
    bucketPort: ports.bucket,
    dataDir,
    logger,
    ...(flags.stsExpire ? { stsExpireSeconds: Number(flags.stsExpire) } : {}),
    ...(externalBucket ? { externalBucket } : {}),
  }).catch((err: unknown) => {
    throw portTakenError(err, ports, flags.port !== undefined);
  });
  const bucketPort = externalBucket ? undefined : Number(new URL(svc.bucket.endpoint).port);
  savePorts(dataDir, {
    api: Number(new URL(svc.baseUrl).port),
    ...(bucketPort ? { bucket: bucketPort } : {}),
  });
  // Every start, for a person (the JSON line above is for scripts): where to sign in, and with what.
  const passwordFile = path.join(dataDir, PILOT_PASSWORD_FILE);
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
  await svc.close();
}

/**
 * The external bucket's settings (README: "External bucket"), from a JSON
 * file so that its secret key never appears on a command line. Errors name
 * the file and the field, never a value.
 */
export function readBucketConfig(file: string, logger?: Logger): ExternalBucketConfig {
  const refuse = (why: string): DmsError =>
    new DmsError('invalid-input', `The bucket settings file ${file} ${why}`, { retryable: false });
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw refuse(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Not the parser's message: it may quote the file, secret included.
    throw refuse('is not valid JSON.');
  }
  let config: ExternalBucketConfig;
  try {
    config = validateExternalBucketConfig(json);
  } catch (err) {
    throw refuse(`has a wrong setting: ${(err as Error).message.replace(/^externalBucket: /, '')}`);
  }
  if (process.platform !== 'win32' && (fs.statSync(file).mode & 0o077) !== 0) {
    logger?.warn(`${file} holds the bucket's secret key and other users can read it; run: chmod 600 ${file}`);
  }
  return config;
}
