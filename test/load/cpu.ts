/**
 * Where the CPU went during a benchmark phase, from /proc (Linux): the CPU
 * time of chosen processes with their descendants, and of the whole machine,
 * so a table can say which process used the cores, and how much was left to
 * everything else running on the machine at the same time.
 */
import fs from 'node:fs';
import os from 'node:os';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK)

interface ProcStat {
  ppid: number;
  /** utime + stime, in ticks. */
  ticks: number;
}

/** Every process's parent and CPU ticks (fields 4, 14 and 15 of /proc/<pid>/stat). */
function processes(): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    out.set(Number(name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
  }
  return out;
}

/** CPU seconds used so far by each group: the listed processes and everything they started. */
export function groupSeconds(groups: Record<string, number[]>): Record<string, number> {
  const all = processes();
  const children = new Map<number, number[]>();
  for (const [pid, p] of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  const result: Record<string, number> = {};
  for (const [name, roots] of Object.entries(groups)) {
    let ticks = 0;
    const seen = new Set<number>();
    const stack = [...roots];
    while (stack.length) {
      const pid = stack.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      ticks += all.get(pid)?.ticks ?? 0;
      stack.push(...(children.get(pid) ?? []));
    }
    result[name] = ticks / TICKS_PER_SECOND;
  }
  return result;
}

/** This process alone (not its children): the simulated agents' own work. */
export function selfSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** CPU seconds the whole machine has been busy so far (all cores, every process). */
export function machineBusySeconds(): number {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = cpu.slice(0, 8).reduce((a, b) => a + b, 0) - cpu[3]! - cpu[4]!;
  return busy / TICKS_PER_SECOND;
}

/** CPU seconds the host has taken from this virtual machine so far (steal): time its processes waited for a core they were given. */
export function stolenSeconds(): number {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (cpu[7] ?? 0) / TICKS_PER_SECOND;
}

export const cores = (): number => os.cpus().length;
