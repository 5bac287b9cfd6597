import { Command, InvalidArgumentError, Option } from 'commander';
import { DmsError, plainMessage, toDmsError, type Moment } from '../core/errors.js';
import { VERSION } from '../core/version.js';
import { visible } from '../shared/visible.js';
import type { ForgetFlags } from './commands/forget.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { asRun, invokedAs } from './invocation.js';
import type { ServeFlags } from './commands/serve.js';
import type { SyncFlags } from './commands/sync.js';
import type { WatchFlags } from './commands/watch.js';
import type { WaylineFlags } from './commands/waylines.js';
import { registerLink } from './commands/link.js';

// Commands are loaded when run: `serve` need not load the AWS SDK, `status`
// need not load the service, so every command starts quickly.

const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number.`);
  return n;
};
/** A height in metres above take-off, 0 to 1000. */
function metres(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 1000)
    throw new InvalidArgumentError('the height must be a number of metres from 0 to 1000, e.g. 50.');
  return n;
}

const collect =
  <T>(parse: (v: string) => T) =>
  (v: string, prev: T[] = []) => [...prev, parse(v)];

function serverOptions(cmd: Command): Command {
  return cmd
    .option(
      '--server <url>',
      'server base URL (env DMS_SERVER; default: settings, else the built-in local service)',
    )
    .option(
      '--token <token>',
      'access token; visible in the process list: prefer DMS_TOKEN or --token-stdin (default: the stored sign-in)',
    )
    .option('--token-stdin', 'read the access token from standard input')
    .option('--workspace <id>', 'workspace id (env DMS_WORKSPACE)')
    .option('--state <dir>', 'state folder: settings, queue, sign-in (env DMS_STATE_DIR)')
    .option('-v, --verbose', 'log details to stderr');
}

export function buildProgram(): Command {
  const program = new Command(invokedAs())
    .description('Uploads DJI drone media to your workspace: once, with the right positions.')
    .version(VERSION, '-V, --version', 'the version of Drone Media Sync')
    .showHelpAfterError()
    .exitOverride();

  serverOptions(program.command('sync').argument('<dir...>', 'folders (or card mount points) to sync'))
    .description('upload everything under the folders, then exit (0 = all done)')
    .addHelpText('after', exitCodesHelp())
    .option('--json', 'one JSON line per file outcome and a final summary line')
    .option(
      '--aircraft <key>',
      'aircraft key for payload cameras that fit several drones, e.g. 0-89-0 (M350)',
    )
    .option(
      '--aircraft-serial <sn>',
      "the aircraft's serial, for files that do not carry it (e.g. H20T photos)",
    )
    .option(
      '--copy-to <dir>',
      'copy each card to this folder first, verified by reading back (repeatable); the upload goes on from the copies',
      collect(String),
    )
    .option(
      '--forget-copy <dir>',
      'a destination of past runs that no longer counts for any card (repeatable); its files are not touched',
      collect(String),
    )
    .action(async (dirs: string[], opts: SyncFlags) => {
      process.exitCode = await (await import('./commands/sync.js')).syncCommand(dirs, opts);
    });

  serverOptions(program.command('watch').argument('[dir...]', 'folders to watch'))
    .description('keep running: sync cards as they are inserted and files as they appear')
    .option('--cards', 'also watch for memory cards being inserted')
    .option(
      '--mount-root <dir>',
      'where cards get mounted (repeatable; default: the OS places)',
      collect(String),
    )
    .option(
      '--copy-to <dir>',
      'copy each card to this folder first, verified by reading back (repeatable)',
      collect(String),
    )
    .option('--json', 'print events as JSON lines')
    .action(async (dirs: string[], opts: WatchFlags) => {
      process.exitCode = await (await import('./commands/watch.js')).watchCommand(dirs, opts);
    });

  program
    .command('status')
    .description('what is queued, done and failed')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .option('--json', 'machine-readable output')
    .option('-v, --verbose', 'also the stored technical text behind each reason files wait')
    .action(async (opts: { state?: string; json?: boolean; verbose?: boolean }) => {
      process.exitCode = (await import('./commands/status.js')).statusCommand(opts);
    });

  program
    .command('report')
    .argument('[dir...]', 'cards or folders synced before (default: the recent ones)')
    .option('--json', 'the report as JSON (the data of the manifest report)')
    .option('--accept-flight <folder>', 'accept a flagged flight as it is (repeatable)', collect(String))
    .option('--min-height <metres>', 'flag photos taken below this height above take-off', metres)
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .description("safe to format? each card's verdict, flights and manifest")
    .action(
      async (
        dirs: string[],
        opts: { state?: string; json?: boolean; acceptFlight?: string[]; minHeight?: number },
      ) => {
        process.exitCode = (await import('./commands/report.js')).reportCommand(dirs, opts);
      },
    );

  program
    .command('copies')
    .description('local copy destinations')
    .command('forget')
    .argument('<dir...>', 'destination folders to forget')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .description('a destination no longer counts for any card (its files are not touched)')
    .action(async (dirs: string[], opts: { state?: string }) => {
      process.exitCode = (await import('./commands/copies.js')).copiesForgetCommand(dirs, opts);
    });

  program
    .command('retry')
    .argument('[path...]', 'failed files to retry')
    .option('--all', 'retry every failed file')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .description('put failed files back in line')
    .action(async (paths: string[], opts: { state?: string; all?: boolean }) => {
      process.exitCode = (await import('./commands/status.js')).retryCommand(paths, opts);
    });

  program
    .command('forget')
    .description('forget a server (or workspace) synced to before: its queue, history and reports here')
    .option('--server <url>', 'the server, as given to sync')
    .option('--local', 'the built-in local service')
    .option('--workspace <id>', 'the workspace, when the server has several here')
    .option('--yes', 'forget it (without: only say what would be dropped)')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .action(async (opts: ForgetFlags) => {
      process.exitCode = (await import('./commands/forget.js')).forgetCommand(opts);
    });

  serverOptions(program.command('waylines'))
    .description("list the workspace's waylines (flight routes)")
    .option('--favorited', 'only favorites')
    .option('--not-favorited', 'only non-favorites')
    .option(
      '--template-type <n>',
      '0 waypoint, 1 mapping 2D, 2 mapping 3D, 3 strip (repeatable)',
      collect(int('template type')),
    )
    .option('--action-type <n>', '1 = AI spot-check waylines', int('action type'))
    .option(
      '--drone-model <model>',
      'aircraft: a model such as M30 or "Matrice 350 RTK", or its key 0-67-0 (repeatable)',
      collect(String),
    )
    .option(
      '--payload-model <model>',
      'payload: a model such as H20T or "Zenmuse P1", or its key 1-43-0 (repeatable)',
      collect(String),
    )
    .option('--order-by <order>', '"<column> asc|desc"', 'update_time desc')
    .option('--page <n>', 'page number', int('page'), 1)
    .option('--page-size <n>', 'items per page', int('page size'), 10)
    .option('--json', 'raw JSON')
    .action(async (opts: WaylineFlags & { notFavorited?: boolean }) => {
      const favorited = opts.favorited ? true : opts.notFavorited ? false : undefined;
      process.exitCode = await (
        await import('./commands/waylines.js')
      ).waylinesCommand({ ...opts, favorited });
    });

  program
    .command('login')
    .description('sign in to a server (password from the prompt or stdin); the token is stored owner-only')
    .requiredOption('--server <url>', 'server base URL')
    .requiredOption('--username <name>', 'user name')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .action(async (opts: { server: string; username: string; state?: string }) => {
      process.exitCode = await (await import('./commands/login.js')).loginCommand(opts);
    });

  program
    .command('logout')
    .description('sign out: delete the sign-in stored by login')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .action(async (opts: { state?: string }) => {
      process.exitCode = (await import('./commands/login.js')).logoutCommand(opts);
    });

  const serve = program
    .command('serve')
    .description('run the reference service (prints one JSON line when ready)')
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
    .option('--port <port>', 'port (default: the one used last time, else a free one; 0 = any free port)')
    .option('--data <dir>', 'data folder (default: <state>/local-service)')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .option('--sts-expire <seconds>', 'lifetime of the temporary bucket credentials')
    .option('--bucket-config <file>', 'JSON settings of a real bucket instead of the embedded one')
    .option(
      '--database <url|file>',
      'postgres://user@host:port/db (password from PGPASSWORD or ~/.pgpass) or a JSON settings file; default: SQLite in the data folder',
    )
    .option(
      '-v, --verbose',
      'JSON log lines at debug level (default: plain lines at a terminal, JSON otherwise)',
    )
    .action(async (opts: ServeFlags) => (await import('./commands/serve.js')).serveCommand(opts));
  serve
    .command('reset-password')
    .argument('<user>', 'the user, e.g. pilot')
    .description(
      "give a user of the service a new random password, written to the data folder (pilot's: pilot-password)",
    )
    .option('--data <dir>', 'data folder (default: <state>/local-service)')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .option('--database <url|file>', 'the database `serve` uses (default: SQLite in the data folder)')
    .action(async (user: string, opts: Pick<ServeFlags, 'data' | 'state' | 'database'>) => {
      // `serve`'s own --data/--state/--database take these options when given after the user.
      const both = { ...serve.opts<Pick<ServeFlags, 'data' | 'state' | 'database'>>(), ...opts };
      process.exitCode = await (await import('./commands/serve.js')).resetPasswordCommand(user, both);
    });

  program
    .command('import-waylines')
    .argument('<file>', 'JSON file: an array of wayline items (contract 2.2)')
    .option('--data <dir>', 'service data folder (default: <state>/local-service)')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .description('add waylines to the reference service')
    .action(async (file: string, opts: { data?: string; state?: string }) => {
      process.exitCode = await (
        await import('./commands/import-waylines.js')
      ).importWaylinesCommand(file, opts);
    });

  registerLink(program);
  return program;
}

/** The moment each command's failures are told in (errors.ts): the rest are one request a person waits on. */
const MOMENTS: Readonly<Record<string, Moment>> = { sync: 'upload', watch: 'upload', login: 'sign-in' };

/** The command named on the command line (the first word that is not an option). */
function commandOf(argv: string[]): string {
  return argv.slice(2).find((a) => !a.startsWith('-')) ?? '';
}

/**
 * The error as a person reads it: one plain sentence for the moment it
 * happened in; the technical message too when it is all there is to say (a
 * bug), or when asked for (-v/--verbose, DMS_LOG_LEVEL=debug). Server and
 * file text inside is made visible-safe.
 */
export function errorLines(err: unknown, argv: string[], env = process.env): string[] {
  const e = err instanceof DmsError ? err : toDmsError(err);
  // A hint inside names the command as the user runs it (`npx drone-media-sync login` in a checkout).
  if (e.kind === 'invalid-input' || e.kind === 'source-missing')
    return [asRun(visible(`drone-media-sync: ${e.message}`))];
  const plain = plainMessage(e, MOMENTS[commandOf(argv)] ?? 'request');
  const verbose = argv.includes('-v') || argv.includes('--verbose') || env.DMS_LOG_LEVEL === 'debug';
  const lines = [`drone-media-sync: ${plain}`];
  if (verbose || (e.kind === 'server' && e.status === undefined)) lines.push(`  Details: ${e.message}`);
  return lines.map((l) => asRun(visible(l)));
}

/** Runs the CLI; returns the exit code. Errors become one plain sentence. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (code.startsWith('commander.')) {
      return code === 'commander.helpDisplayed' || code === 'commander.version' || code === 'commander.help'
        ? 0
        : EXIT.usage;
    }
    const e = err instanceof DmsError ? err : toDmsError(err);
    process.stderr.write(errorLines(e, argv).join('\n') + '\n');
    // A command not right is not retryable; a full disk or a failing store is (files left: 1).
    return e.kind === 'auth'
      ? EXIT.auth
      : e.kind === 'invalid-input' && !e.retryable
        ? EXIT.usage
        : EXIT.notAllDone;
  }
}
