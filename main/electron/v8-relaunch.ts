/**
 * The desktop app's agent runs in Electron's main process, whose V8 reads
 * `--js-flags` only from the command line it was started with (issue 33:
 * without AGENT_V8_FLAGS the first sync of a 10,000-file card peaked at
 * 429 MiB, against 245-248 with them). The app's own launchers give them: the
 * Linux desktop entry (electron-builder.yml, linux.executableArgs), the login
 * item (login-item.ts) and `npm start`. Started any other way (an AppImage
 * double-clicked, a Windows Start-menu shortcut, macOS's Finder or login
 * item), the app starts itself once more with them, before it takes the
 * single-instance lock or opens anything, and this first process exits.
 *
 * An AppImage is started again from the AppImage file ($APPIMAGE), not from
 * process.execPath: that path is inside the AppImage's mount, which goes
 * away when this process exits (electron-builder issue 1727). Electron's own
 * app.relaunch() starts a helper from that same mount, so it is not used.
 *
 * Started once more and still without the flags (an environment that strips
 * them), it never loops: the second start carries DMS_V8_RELAUNCHED, runs as
 * it is, and sets at run time what V8 still takes then (the heap's growth:
 * 429 -> 373 MiB in the same measure; the young generation's size is fixed
 * at start).
 */
import { spawn } from 'node:child_process';
import v8 from 'node:v8';
import { AGENT_V8_FLAGS } from '../core/node-flags.js';

/** Set in the environment of the second start: it never starts a third. */
export const RELAUNCHED_ENV = 'DMS_V8_RELAUNCHED';

/** The one argument that gives Electron's main process the agent's flags. */
export const JS_FLAGS_ARG = `--js-flags=${AGENT_V8_FLAGS.join(' ')}`;

/** V8 takes `--max-semi-space-size`, `--max_semi_space_size` and `-max-semi-space-size` alike. */
function flagName(flag: string): string {
  return (flag.replace(/^--?/, '').split('=')[0] ?? '').replace(/_/g, '-');
}

function words(jsFlags: string): string[] {
  return jsFlags.split(/\s+/).filter(Boolean);
}

/** The agent's flags not named in this `--js-flags` value (one the user set to another value stays theirs). */
export function missingV8Flags(jsFlags: string): string[] {
  const named = new Set(words(jsFlags).map(flagName));
  return AGENT_V8_FLAGS.filter((f) => !named.has(flagName(f)));
}

export interface RelaunchInput {
  /** process.argv: the executable, then the arguments (in a checkout, the app's folder first). */
  argv: readonly string[];
  /** The value of the `--js-flags` switch this process started with ('' when none). */
  jsFlags: string;
  env: NodeJS.ProcessEnv;
  packaged: boolean;
  execPath: string;
}

export interface Relaunch {
  file: string;
  args: string[];
}

/** How to start again with the agent's flags, or null when this process has them (or already is the second start). */
export function v8Relaunch(i: RelaunchInput): Relaunch | null {
  const missing = missingV8Flags(i.jsFlags);
  if (missing.length === 0 || i.env[RELAUNCHED_ENV]) return null;
  const jsFlags = [...missing, ...words(i.jsFlags)].join(' ');
  const rest = i.argv.slice(1).filter((a) => !/^--?js-flags(=|$)/.test(a));
  const file = i.packaged && i.env.APPIMAGE ? i.env.APPIMAGE : i.execPath;
  return { file, args: [`--js-flags=${jsFlags}`, ...rest] };
}

export interface ElectronStart {
  argv: readonly string[];
  jsFlags: string;
  packaged: boolean;
  env?: NodeJS.ProcessEnv;
  execPath?: string;
  /** Where a line about the restart goes (the app's log is not open yet). */
  say?: (line: string) => void;
}

/**
 * Starts the app again with the agent's flags when this process lacks them.
 * True: the second start is running, and this process must exit at once.
 * False: go on here (the flags are in place, or could not be given by a
 * restart: those V8 still takes at run time are then set).
 */
export async function startWithV8Flags(s: ElectronStart): Promise<boolean> {
  const env = s.env ?? process.env;
  const say = s.say ?? ((line: string) => process.stderr.write(`${line}\n`));
  const plan = v8Relaunch({ ...s, env, execPath: s.execPath ?? process.execPath });
  const secondStart = Boolean(env[RELAUNCHED_ENV]);
  delete env[RELAUNCHED_ENV]; // not passed on to what this process starts
  if (plan) {
    const started = await new Promise<true | Error>((resolve) => {
      const child = spawn(plan.file, plan.args, {
        detached: true,
        stdio: 'inherit',
        env: { ...env, [RELAUNCHED_ENV]: '1' },
      });
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
      child.once('error', resolve);
    });
    if (started === true) return true;
    say(
      `Drone Media Sync: could not start again with its memory settings (${started.message}); going on without them.`,
    );
  }
  const missing = missingV8Flags(s.jsFlags);
  if (missing.length > 0) {
    if (secondStart)
      say(`Drone Media Sync: started again but V8 still lacks ${missing.join(' ')}; going on without them.`);
    v8.setFlagsFromString(missing.join(' '));
  }
  return false;
}
