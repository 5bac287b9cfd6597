import { Command, InvalidArgumentError, Option } from 'commander';
import { DmsError, plainMessage, toDmsError } from '../core/errors.js';
import type { ServeFlags } from './commands/serve.js';
import type { SyncFlags } from './commands/sync.js';
import type { WatchFlags } from './commands/watch.js';
import type { WaylineFlags } from './commands/waylines.js';

// Commands are loaded when run: `serve` need not load the AWS SDK, `status`
// need not load the service, so every command starts quickly.
const EXIT = { ok: 0, notAllDone: 1, usage: 2, auth: 3 } as const;

const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number.`);
  return n;
};
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
  const program = new Command('drone-media-sync')
    .description('Uploads DJI drone media to your workspace: once, with the right positions.')
    .showHelpAfterError()
    .exitOverride();

  serverOptions(program.command('sync').argument('<dir...>', 'folders (or card mount points) to sync'))
    .description('upload everything under the folders, then exit (0 = all done)')
    .option('--json', 'one JSON line per file outcome and a final summary line')
    .option(
      '--aircraft <key>',
      'aircraft key for payload cameras that fit several drones, e.g. 0-89-0 (M350)',
    )
    .option(
      '--aircraft-serial <sn>',
      "the aircraft's serial, for files that do not carry it (e.g. H20T photos)",
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
    .option('--json', 'print events as JSON lines')
    .action(async (dirs: string[], opts: WatchFlags) => {
      process.exitCode = await (await import('./commands/watch.js')).watchCommand(dirs, opts);
    });

  program
    .command('status')
    .description('what is queued, done and failed')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { state?: string; json?: boolean }) => {
      process.exitCode = (await import('./commands/status.js')).statusCommand(opts);
    });

  program
    .command('report')
    .argument('[dir...]', 'cards or folders synced before (default: the recent ones)')
    .option('--json', 'the report as JSON (the data of the manifest report)')
    .option('--accept-flight <folder>', 'accept a flagged flight as it is (repeatable)', collect(String))
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .description("safe to format? each card's verdict, flights and manifest")
    .action(async (dirs: string[], opts: { state?: string; json?: boolean; acceptFlight?: string[] }) => {
      process.exitCode = (await import('./commands/report.js')).reportCommand(dirs, opts);
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
    .option('--drone-model <key>', 'aircraft key, e.g. 0-67-0 (repeatable)', collect(String))
    .option('--payload-model <key>', 'payload key, e.g. 1-53-0 (repeatable)', collect(String))
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
    .command('serve')
    .description('run the reference service (prints one JSON line when ready)')
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
    .addOption(new Option('--port <port>', 'port (0 = any free port)').default('0'))
    .option('--data <dir>', 'data folder (default: <state>/local-service)')
    .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
    .option('--sts-expire <seconds>', 'lifetime of the temporary bucket credentials')
    .option('--bucket-config <file>', 'JSON settings of a real bucket instead of the embedded one')
    .option(
      '--database <url|file>',
      'postgres://user@host:port/db (password from PGPASSWORD or ~/.pgpass) or a JSON settings file; default: SQLite in the data folder',
    )
    .action(async (opts: ServeFlags) => (await import('./commands/serve.js')).serveCommand(opts));

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

  return program;
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
    process.stderr.write(
      `drone-media-sync: ${e.kind === 'invalid-input' || e.kind === 'source-missing' ? e.message : `${plainMessage(e)} (${e.message})`}\n`,
    );
    return e.kind === 'auth' ? EXIT.auth : e.kind === 'invalid-input' ? EXIT.usage : EXIT.notAllDone;
  }
}
