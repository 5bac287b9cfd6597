import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../core/api/client.js';
import { loadConfig, type Config } from '../core/config.js';
import { DmsError } from '../core/errors.js';
import { createLogger, type Logger } from '../core/log.js';
import { dispatcherWithCa, loadCaFile } from '../core/tls.js';
import { defaultStateDir, statePaths, type StatePaths } from '../core/paths.js';
import type { RunningService } from '../service/index.js';

/** Options every command that talks to a server accepts. */
export interface ServerFlags {
  server?: string;
  token?: string;
  workspace?: string;
  state?: string;
  verbose?: boolean;
}

export interface CliContext {
  paths: StatePaths;
  config: Config;
  api: ApiClient;
  logger: Logger;
  /** Where we are talking to, for messages ("local service" or the URL). */
  serverLabel: string;
  /** Set when the embedded reference service was started for this run. */
  embedded: RunningService | null;
  /** Re-reads the stored sign-in (after `login` in another terminal); true when the token changed. */
  reloadToken(): boolean;
  close(): Promise<void>;
}

export function resolveStateDir(flags: { state?: string }, env = process.env): string {
  return flags.state ? path.resolve(flags.state) : defaultStateDir(env);
}

/** The stored sign-in (written by `login`, owner-only). */
export interface StoredToken {
  server: string;
  workspaceId: string;
  token: string;
}

export function readStoredToken(file: string): StoredToken | null {
  try {
    const v = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<StoredToken>;
    return typeof v.token === 'string' && typeof v.server === 'string' && typeof v.workspaceId === 'string'
      ? (v as StoredToken)
      : null;
  } catch {
    return null;
  }
}

export function writeStoredToken(file: string, value: StoredToken): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
  fs.chmodSync(file, 0o600);
}

/**
 * Works out which server to use, in order: flags, DMS_* environment, the
 * settings file + stored sign-in; with none, the built-in local service is
 * started in-process (data in the state dir), so everything works out of the box.
 */
export async function openContext(flags: ServerFlags, env = process.env): Promise<CliContext> {
  const paths = statePaths(resolveStateDir(flags, env));
  const config = loadConfig(paths.config);
  const logger = createLogger({ level: flags.verbose ? 'debug' : (env.DMS_LOG_LEVEL ?? 'warn') });
  const stored = readStoredToken(paths.token);
  const serverUrl = flags.server ?? env.DMS_SERVER ?? (config.useLocalService ? undefined : config.server?.url);

  if (!serverUrl) {
    // Loaded only here: with a server configured, `sync` need not load fastify,
    // s3rver and the service's SQLite code at all (about 0.35 s of every start).
    const { startService } = await import('../service/index.js');
    const svc = await startService({ dataDir: paths.service, port: 0, logger: false });
    const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
    return {
      paths,
      config,
      api,
      logger,
      serverLabel: 'the built-in local service',
      embedded: svc,
      reloadToken: () => false,
      close: () => svc.close(),
    };
  }
  const sameServer = stored && stored.server === serverUrl;
  const token = flags.token ?? env.DMS_TOKEN ?? (sameServer ? stored.token : undefined);
  const workspace =
    flags.workspace ?? env.DMS_WORKSPACE ?? (sameServer ? stored.workspaceId : undefined) ?? config.server?.workspaceId;
  if (!token) {
    throw new DmsError('auth', `No sign-in for ${serverUrl}. Run: drone-media-sync login --server ${serverUrl} --username <name> (or pass --token / DMS_TOKEN).`, { retryable: false });
  }
  if (!workspace) {
    throw new DmsError('invalid-input', 'No workspace is set. Pass --workspace <id> or set DMS_WORKSPACE.', { retryable: false });
  }
  const api = new ApiClient({
    baseUrl: serverUrl,
    workspaceId: workspace,
    token,
    ...(config.caFile ? { dispatcher: dispatcherWithCa(loadCaFile(config.caFile)) } : {}),
  });
  let current = token;
  const fromFile = !flags.token && !env.DMS_TOKEN;
  const reloadToken = (): boolean => {
    if (!fromFile) return false;
    const s = readStoredToken(paths.token);
    if (!s || s.server !== serverUrl || s.token === current) return false;
    current = s.token;
    api.setToken(s.token);
    return true;
  };
  return { paths, config, api, logger, serverLabel: serverUrl, embedded: null, reloadToken, close: async () => {} };
}
