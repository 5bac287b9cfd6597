import path from 'node:path';
import type { ApiClient } from '../core/api/client.js';
import { loadConfig, type Config } from '../core/config.js';
import { DmsError } from '../core/errors.js';
import pino from 'pino';
import { agentLogDir, createFileLogger } from '../core/log-file.js';
import { createLogger, createPlainLogger, plainStream, type Logger } from '../core/log.js';
import { defaultStateDir, statePaths, type StatePaths } from '../core/paths.js';
import {
  resolveConnection,
  type Connection,
  type ConnectionInputs,
  type LocalServiceHandle,
} from '../core/session/connection.js';
import { openSession, type Session } from '../core/session/open.js';
import { TokenFile } from '../core/session/token-file.js';
import type { RunningService } from '../service/index.js';
import { invokedAs } from './invocation.js';
import { requireWritable } from './state-access.js';

/** Options every command that talks to a server accepts. */
export interface ServerFlags {
  server?: string;
  token?: string;
  /** Read the access token from standard input (not visible in the process list). */
  tokenStdin?: boolean;
  workspace?: string;
  state?: string;
  verbose?: boolean;
}

export interface CliContext {
  paths: StatePaths;
  config: Config;
  api: ApiClient;
  logger: Logger;
  /** Where we are talking to, for messages ("the built-in local service" or the URL). */
  serverLabel: string;
  /** Re-reads the stored sign-in (after `login` in another terminal); true when the token changed. */
  reloadToken(): boolean;
  close(): Promise<void>;
}

/** A context that also holds the one-agent lock and the queue, bound to the target (sync, watch). */
export interface AgentContext extends CliContext {
  session: Session;
  /** Opened with `signedOut: 'allow'` and no sign-in: why nothing can be sent (local copies still can be made). */
  signInMissing: DmsError | null;
  /** The folder of the agent's log file, when it writes one (`watch`). */
  logDir: string | null;
}

export interface AgentOptions {
  /** Write the agent's log file, the one the app writes (the headless agent: `watch`). */
  logFile?: boolean;
}

/** Why a server connection without a sign-in cannot send anything, in the words the CLI says it. */
function notSignedIn(serverUrl: string): DmsError {
  const says = `Not signed in to ${serverUrl}. Run: drone-media-sync login --server ${serverUrl} --username <name> (or set DMS_TOKEN).`;
  return new DmsError('auth', says, { retryable: false, plain: says });
}

export function resolveStateDir(flags: { state?: string }, env = process.env): string {
  return flags.state ? path.resolve(flags.state) : defaultStateDir(env);
}

async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.trim();
}

/**
 * The token from the flags: `--token-stdin` reads it; `--token T` works but
 * is visible to every user of the machine in the process list, so it warns.
 */
async function tokenFlag(flags: ServerFlags): Promise<string | undefined> {
  if (flags.tokenStdin) {
    const token = await readStdin();
    if (token === '')
      throw new DmsError('invalid-input', 'No token on standard input (--token-stdin).', {
        retryable: false,
      });
    return token;
  }
  if (flags.token !== undefined) {
    process.stderr.write(
      `Warning: --token is visible to other users in the process list. Prefer DMS_TOKEN, --token-stdin, or \`${invokedAs()} login\`.\n`,
    );
  }
  return flags.token;
}

/**
 * Which server to use, in order: flags, DMS_* environment, the settings
 * file + stored sign-in; with none, the built-in local service is started
 * in-process (data in the state dir), so everything works out of the box.
 */
async function cliInputs(flags: ServerFlags, env: NodeJS.ProcessEnv, agent?: AgentOptions) {
  const paths = statePaths(resolveStateDir(flags, env));
  const config = loadConfig(paths.config);
  // A person at a terminal reads plain warnings; the JSON log is for -v and DMS_LOG_LEVEL.
  const jsonOnStderr = flags.verbose || env.DMS_LOG_LEVEL !== undefined;
  const level = flags.verbose ? 'debug' : env.DMS_LOG_LEVEL;
  const skip = agent ? saidByTheCommand : undefined;
  // The headless agent (`watch`) writes the app's log file too, and still says its warnings here.
  const file = agent?.logFile
    ? await createFileLogger(agentLogDir(env), {
        level: env.DMS_LOG_LEVEL ?? 'info',
        echo: jsonOnStderr
          ? { level: level ?? 'info', stream: pino.destination({ fd: 2, sync: true }) }
          : { level: 'warn', stream: plainStream(process.stderr, skip) },
      })
    : null;
  const logger =
    file?.logger ??
    (jsonOnStderr ? createLogger({ level }) : createPlainLogger('warn', process.stderr, skip));
  const token = await tokenFlag(flags);
  let local: RunningService | null = null;
  const inputs: ConnectionInputs = {
    config,
    env,
    flags: {
      ...(flags.server === undefined ? {} : { server: flags.server }),
      ...(token === undefined ? {} : { token }),
      ...(flags.workspace === undefined ? {} : { workspace: flags.workspace }),
    },
    tokens: new TokenFile(paths.token),
    noServer: 'local',
    localService: async (): Promise<LocalServiceHandle> => {
      // Loaded only here: with a server configured, `sync` need not load
      // fastify, the bucket and the service's SQLite code at all.
      requireWritable(paths.service, "the built-in local service's data");
      const { startService } = await import('../service/index.js');
      local = await startService({ dataDir: paths.service, port: 0, logger: false });
      return {
        baseUrl: local.baseUrl,
        workspaceId: local.workspaceId,
        token: local.token,
        dataDir: paths.service,
      };
    },
  };
  return {
    paths,
    config,
    logger,
    inputs,
    logDir: file?.dir ?? null,
    closeLocal: async () => {
      file?.flush();
      await local?.close();
    },
  };
}

/**
 * The engine's warnings that `sync` and `watch` say themselves, from the
 * agent's events: a destination that stopped ('destination-stopped'), a file
 * that failed or a copy missing (the file's outcome, the card's verdict).
 * In the plain log too, they would be said twice.
 */
export function saidByTheCommand(entry: Record<string, unknown>): boolean {
  return 'destination' in entry || 'file' in entry;
}

/** The CLI works with a server or the local service; a sign-in that is missing is said plainly. */
function usable(
  c: Connection,
  signedOut: 'refuse' | 'allow' = 'refuse',
): Exclude<Connection, { kind: 'none' }> {
  if (c.kind === 'none') {
    throw new DmsError(
      'invalid-input',
      'No workspace is set. Pass --workspace <id>, set DMS_WORKSPACE, or sign in with `drone-media-sync login`.',
      {
        retryable: false,
      },
    );
  }
  if (c.kind === 'server' && !c.signedIn && signedOut === 'refuse') {
    throw notSignedIn(c.serverUrl);
  }
  return c;
}

function fromConnection(c: Exclude<Connection, { kind: 'none' }>) {
  return { api: c.api, serverLabel: c.label, reloadToken: () => c.kind === 'server' && c.reloadToken() };
}

/** For commands that only talk to the server (waylines): no lock, no queue. */
export async function openContext(flags: ServerFlags, env = process.env): Promise<CliContext> {
  const { paths, config, logger, inputs, closeLocal } = await cliInputs(flags, env);
  try {
    const c = usable(await resolveConnection(inputs));
    return { paths, config, logger, ...fromConnection(c), close: closeLocal };
  } catch (err) {
    await closeLocal();
    throw err;
  }
}

/** For the commands that drain the queue (sync, watch): the lock, the queue, the server; one way, in core. */
export async function openAgentContext(
  flags: ServerFlags,
  env = process.env,
  /** 'allow' (`sync` with local copies): no sign-in is not an error here; `signInMissing` says it. */
  signedOut: 'refuse' | 'allow' = 'refuse',
  opts: AgentOptions = {},
): Promise<AgentContext> {
  const root = statePaths(resolveStateDir(flags, env)).root;
  requireWritable(root, 'the upload queue');
  const { paths, config, logger, logDir, inputs, closeLocal } = await cliInputs(flags, env, opts);
  let session: Session | null = null;
  try {
    session = await openSession({ ...inputs, stateDir: paths.root });
    const s = session;
    const c = usable(s.connection, signedOut);
    return {
      paths,
      config,
      logger,
      logDir,
      session: s,
      signInMissing: c.kind === 'server' && !c.signedIn ? notSignedIn(c.serverUrl) : null,
      ...fromConnection(c),
      close: async () => {
        s.close();
        await closeLocal();
      },
    };
  } catch (err) {
    session?.close();
    await closeLocal();
    throw err;
  }
}
