import path from 'node:path';
import { createLogger } from '../../core/log.js';
import { statePaths } from '../../core/paths.js';
import { startService } from '../../service/index.js';
import { resolveStateDir } from '../context.js';

export interface ServeFlags {
  host: string;
  port: string;
  data?: string;
  state?: string;
  stsExpire?: string;
}

/**
 * `serve`: the reference service. Prints exactly one JSON line on stdout when
 * ready (scripts and tests read it), then logs to stderr; SIGTERM/SIGINT stop it.
 */
export async function serveCommand(flags: ServeFlags): Promise<void> {
  const dataDir = flags.data ? path.resolve(flags.data) : statePaths(resolveStateDir(flags)).service;
  const port = Number(flags.port);
  const svc = await startService({
    host: flags.host,
    port,
    dataDir,
    logger: createLogger({ level: process.env.DMS_LOG_LEVEL ?? 'info' }),
    ...(flags.stsExpire ? { stsExpireSeconds: Number(flags.stsExpire) } : {}),
  });
  process.stdout.write(JSON.stringify({ base_url: svc.baseUrl, workspace_id: svc.workspaceId, token: svc.token }) + '\n');
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await svc.close();
}
