/**
 * `systemctl` for docs/deploy.md's recipe where systemd is not PID 1 (this
 * machine, CI containers): the peer test puts this first on the recipe's
 * PATH (run by Node 24, types stripped). It starts a unit as systemd would
 * from its unit file: the recipe's own (`/etc/systemd/system/…`, written
 * from the document) or the package's (`/lib/systemd/system/…`), template
 * instance `%i`, `Environment=`, `EnvironmentFile=`, `User=`/`Group=`, then
 * `ExecStart=` in the background, its output in <root>/log/<unit>.log and
 * its pid in <root>/units/<unit>.pid. `ExecStartPre=` is not run (Ceph's
 * osd prestart script only checks a journal link under the real
 * /var/lib/ceph). The package's unit files get the test's substitutions
 * (DMS_RECIPE_SUBST) as the document's blocks do.
 *
 *   systemctl daemon-reload | enable --now U… | start U… | stop U… | restart U…
 *
 * Anything else exits 1, so a recipe that asks more of systemd fails the test.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = process.env.DMS_RECIPE_ROOT;
if (!root) throw new Error('DMS_RECIPE_ROOT is not set');
const subst = JSON.parse(process.env.DMS_RECIPE_SUBST ?? '[]') as [string, string][];
const unitsDir = path.join(root, 'units');
fs.mkdirSync(unitsDir, { recursive: true });
fs.mkdirSync(path.join(root, 'log'), { recursive: true });

const substitute = (text: string): string => subst.reduce((t, [from, to]) => t.split(from).join(to), text);

/** Running and not a zombie (PID 1 here reaps orphans slowly). */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

const unitName = (u: string): string => (/\.(service|target|socket|timer)$/.test(u) ? u : `${u}.service`);
const pidFile = (unit: string): string => path.join(unitsDir, `${unit}.pid`);

function runningPid(unit: string): number | null {
  try {
    const pid = Number(fs.readFileSync(pidFile(unit), 'utf8'));
    return alive(pid) ? pid : null;
  } catch {
    return null;
  }
}

function unitFile(unit: string): { text: string; instance: string } {
  const m = /^(.+)@(.*)(\.service)$/.exec(unit);
  const names = m ? [unit, `${m[1]}@${m[3]}`] : [unit];
  // The recipe's unit files were written from the document with the substitutions made; the package's get them here.
  const dirs: [string, (t: string) => string][] = [
    [substitute('/etc/systemd/system'), (t) => t],
    ['/lib/systemd/system', substitute],
  ];
  for (const [dir, change] of dirs) {
    for (const name of names) {
      const file = path.join(dir, name);
      if (fs.existsSync(file)) return { text: change(fs.readFileSync(file, 'utf8')), instance: m?.[2] ?? '' };
    }
  }
  throw new Error(`Unit ${unit} not found.`);
}

/** Words as systemd splits them: whitespace, double or single quotes grouping. */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((w) => w[1] ?? w[2] ?? w[3]!);
}

function start(unit: string): void {
  if (runningPid(unit) !== null) return;
  const { text, instance } = unitFile(unit);
  const env: Record<string, string> = {};
  let user: string | undefined;
  let group: string | undefined;
  let exec: string | undefined;
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim().replaceAll('%i', instance).replaceAll('%I', instance);
    if (line.startsWith('[')) section = line;
    if (section !== '[Service]' || line.startsWith('#')) continue;
    const [key, ...rest] = line.split('=');
    const value = rest.join('=');
    if (key === 'Environment') {
      for (const w of words(value)) env[w.slice(0, w.indexOf('='))] = w.slice(w.indexOf('=') + 1);
    } else if (key === 'EnvironmentFile') {
      const file = value.replace(/^-/, '');
      if (!fs.existsSync(file)) {
        if (value.startsWith('-')) continue;
        throw new Error(`${unit}: EnvironmentFile ${file} is missing`);
      }
      for (const l of fs.readFileSync(file, 'utf8').split('\n')) {
        const kv = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(l);
        if (kv) env[kv[1]!] = kv[2]!.replace(/^"(.*)"$/, '$1');
      }
    } else if (key === 'User') user = value;
    else if (key === 'Group') group = value;
    else if (key === 'ExecStart') exec = value.replace(/^[-@+!]+/, '');
  }
  if (!exec) throw new Error(`${unit}: no ExecStart`);
  const argv = words(exec).flatMap((w) => {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(w);
    if (whole) return words(env[whole[1]!] ?? '');
    return [w.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_all, k: string) => env[k] ?? '')];
  });
  const asUser =
    user && user !== 'root'
      ? ['setpriv', `--reuid=${user}`, `--regid=${group ?? user}`, '--init-groups', '--']
      : [];
  const [cmd, ...args] = [...asUser, ...argv];
  const log = fs.openSync(path.join(root!, 'log', `${unit}.log`), 'a');
  const child = spawn(cmd!, args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...process.env, ...env },
  });
  fs.writeFileSync(pidFile(unit), String(child.pid));
  fs.appendFileSync(path.join(unitsDir, 'order'), `${unit}\n`);
  child.unref();
}

function stop(unit: string): void {
  const pid = runningPid(unit);
  if (pid === null) return;
  process.kill(pid, 'SIGTERM');
  const end = Date.now() + 45_000;
  while (alive(pid) && Date.now() < end) execFileSync('sleep', ['0.1']);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

const [command, ...rest] = process.argv.slice(2);
const units = rest.filter((a) => !a.startsWith('--')).map(unitName);
try {
  if (command === 'daemon-reload') {
    // Unit files are read at each start.
  } else if (command === 'enable' && rest.includes('--now')) units.forEach(start);
  else if (command === 'start') units.forEach(start);
  else if (command === 'stop') units.forEach(stop);
  else if (command === 'restart') units.forEach((u) => (stop(u), start(u)));
  else throw new Error(`systemctl ${process.argv.slice(2).join(' ')}: not done by the test's systemctl`);
} catch (err) {
  process.stderr.write(`systemctl (test): ${(err as Error).message}\n`);
  process.exit(1);
}
