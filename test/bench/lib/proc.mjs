// Runs a command and measures it: wall time, CPU seconds (user + system),
// peak RSS (VmHWM), and the CPU the reference service used meanwhile.
// CPU and VmHWM come from polling /proc/<pid> (the last sample before exit);
// a Node child started with the exit-stats hook reports exact figures itself.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { setInterval, clearInterval, setTimeout, clearTimeout } from 'node:timers';
import { performance } from 'node:perf_hooks';

let clkTck = 100;
try {
  clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // 100 on every Linux we know of
}

/** Children still running (killed by the benchmark when it is interrupted). */
export const running = new Set();

/** CPU seconds (user + system) of a live process, or null when it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clkTck;
  } catch {
    return null;
  }
}

/** Peak resident set (VmHWM) in MiB, or null. */
export function peakRssMiB(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Bytes the process made the storage layer read (/proc/<pid>/io read_bytes), or null. */
export function ioReadBytes(pid) {
  try {
    const m = /read_bytes:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * CPU seconds of a live process's threads, summed by thread name (Node's:
 * MainThread, WorkerThread for worker_threads, libuv-worker for the file
 * system's thread pool, V8Worker for the collector and compiler).
 */
export function threadCpu(pid) {
  const out = {};
  let tids;
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / clkTck;
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/**
 * Seconds the threads of a live process spent runnable but waiting for a
 * core (/proc/<pid>/task/<tid>/schedstat, second field): on a shared machine,
 * the CPU other work took from it.
 */
export function waitForCpuS(pid) {
  let total = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return null;
  }
  return total;
}

/** Keeps the last `max` characters of a stream. */
function tail(max) {
  let text = '';
  return {
    push(chunk) {
      text += chunk;
      if (text.length > max * 2) text = text.slice(-max);
    },
    get value() {
      return text.slice(-max);
    },
  };
}

/**
 * Runs `cmd args` to completion. Options: env, cwd, svcPid (the service, whose
 * CPU use during the run is reported), statsFile (written by exit-stats.mjs),
 * onLine (each stdout line), timeoutMs, until (a predicate over stdout
 * lines: at the first line it accepts, the process's figures so far are taken
 * as `mark` and it is killed; `onMark` is called at that moment, before the
 * kill, for figures of the caller's own).
 * Resolves { code, wallS, cpuS, peakRssMiB, svcCpuS, mark, stdoutTail, stderrTail };
 * mark: { wallS, cpuS, peakRssMiB, ioReadBytes, threads, waitForCpuS, svcCpuS } or null.
 */
export function measure(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const svc0 = opts.svcPid ? cpuSeconds(opts.svcPid) : null;
    const t0 = performance.now();
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let cpu = 0;
    let rss = 0;
    let wall = 0;
    let svc1 = null;
    let mark = null;
    const takeMark = (line) => {
      if (mark || !opts.until?.(line)) return;
      mark = {
        wallS: (performance.now() - t0) / 1000,
        cpuS: cpuSeconds(child.pid),
        peakRssMiB: peakRssMiB(child.pid),
        ioReadBytes: ioReadBytes(child.pid),
        threads: threadCpu(child.pid),
        waitForCpuS: waitForCpuS(child.pid),
        svcCpuS: opts.svcPid && svc0 !== null ? cpuSeconds(opts.svcPid) - svc0 : null,
        ...opts.onMark?.(),
      };
      child.kill('SIGKILL');
    };
    const sample = () => {
      const c = cpuSeconds(child.pid);
      if (c !== null) cpu = c;
      const r = peakRssMiB(child.pid);
      if (r !== null) rss = Math.max(rss, r);
    };
    const poll = setInterval(sample, 50);
    const out = tail(64 * 1024);
    const err = tail(8 * 1024);
    let partial = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out.push(d);
      if (opts.onLine || opts.until) {
        // A long line (a 10,000-photo card's 3 MB verdict) comes in many chunks: only a chunk
        // that ends a line is split, so the line so far is not copied and searched once per
        // chunk (48 times for that line). The agent waited for this reader to take its output
        // before it could exit: 0.3-0.4 s of row 3's wall time (issue 33).
        if (!d.includes('\n')) {
          partial += d;
          return;
        }
        const lines = (partial + d).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) {
          opts.onLine?.(l);
          takeMark(l);
        }
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => err.push(d));
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
        }, opts.timeoutMs)
      : null;
    child.on('error', (e) => {
      clearInterval(poll);
      if (timer) clearTimeout(timer);
      reject(e);
    });
    child.on('exit', () => {
      wall = (performance.now() - t0) / 1000;
      svc1 = opts.svcPid ? cpuSeconds(opts.svcPid) : null;
      clearInterval(poll);
      if (timer) clearTimeout(timer);
    });
    child.on('close', (code, signal) => {
      running.delete(child);
      if (partial) {
        opts.onLine?.(partial);
        takeMark(partial);
      }
      let cpuS = cpu;
      let peak = rss;
      if (opts.statsFile) {
        try {
          const s = JSON.parse(fs.readFileSync(opts.statsFile, 'utf8'));
          cpuS = (s.userCPUTime + s.systemCPUTime) / 1e6;
          peak = s.maxRSS / 1024;
        } catch {
          // the child died before its exit hook: keep the polled figures
        }
      }
      resolve({
        code: code ?? (signal ? 128 : 1),
        signal,
        wallS: wall,
        cpuS,
        peakRssMiB: peak,
        svcCpuS: svc0 !== null && svc1 !== null ? svc1 - svc0 : null,
        mark,
        stdoutTail: out.value,
        stderrTail: err.value,
      });
    });
  });
}
