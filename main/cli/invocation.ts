/**
 * The command the user actually ran, for the hints the CLI prints ("Run:
 * … login"): `drone-media-sync` only where that is on PATH (installed, or
 * `npm link`ed); in a checkout `npx drone-media-sync` (also for `npm start`
 * and other npm scripts), or the `node …/bin.js` that was typed.
 */
import path from 'node:path';

export const PROGRAM = 'drone-media-sync';

export function invokedAs(
  argv: readonly string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): string {
  const script = argv[1] ?? '';
  const base = path.basename(script).replace(/\.(cmd|ps1|exe)$/i, '');
  // Through its name: on PATH, or npx's link to it.
  if (base === PROGRAM) return env.npm_command === 'exec' ? `npx ${PROGRAM}` : PROGRAM;
  // The checkout's scripts: `npm run cli -- …`, and `npm start` running the headless agent.
  if (env.npm_command === 'run-script' && env.npm_lifecycle_event === 'cli') return 'npm run cli --';
  if (env.npm_command === 'start') return `npx ${PROGRAM}`;
  if (!script) return PROGRAM;
  const rel = path.relative(cwd, script);
  const shown = rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : script;
  return `node ${/\s/.test(shown) ? JSON.stringify(shown) : shown}`;
}

/** Commands of this program named in a message ("drone-media-sync login …"), as the user runs them. */
const NAMED = new RegExp(
  `(^|[\\s\`"(])${PROGRAM}(?= (login|logout|status|retry|report|sync|watch|serve)\\b)`,
  'g',
);

export function asRun(text: string, as = invokedAs()): string {
  return as === PROGRAM ? text : text.replace(NAMED, (_m, before: string) => `${before}${as}`);
}
