// Preloaded into the agent by `bench --mem-sample <file>` (node --import): where its memory is,
// thread by thread. Every 250 ms one JSON line to <file>.<pid>: the process's RSS (VmRSS, VmHWM,
// RssAnon, RssFile), the main thread's heap (total, used, new space, external, arrayBuffers) and
// each worker thread's heap (Worker#getHeapStatistics: total, used, its young-generation limit);
// at each new peak of VmRSS, /proc/self/smaps summed by mapping to <file>.<pid>.smaps (anonymous
// memory: V8's heaps and malloc's arenas; file-backed: node's binary and modules). Summarise with
// `node test/bench/mem-breakdown.mjs <file>.<pid>`. /proc/<pid>/task/*/status has no per-thread
// RSS: the heaps are the per-thread part.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import v8 from 'node:v8';
import { performance } from 'node:perf_hooks';
import { setInterval } from 'node:timers';
import { isMainThread } from 'node:worker_threads';

const file = process.env.DMS_MEM_SAMPLE ? `${process.env.DMS_MEM_SAMPLE}.${process.pid}` : null;
if (file && isMainThread) {
  // The agent's workers, as it creates them (its modules import Worker after this preload).
  const wt = createRequire(import.meta.url)('node:worker_threads');
  const workers = new Map();
  const Original = wt.Worker;
  let n = 0;
  wt.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      workers.set(this, { id: ++n, heap: null });
      this.on('exit', () => workers.delete(this));
    }
  };
  syncBuiltinESMExports();
  fs.writeFileSync(`${file}.argv`, process.argv.join(' '));
  const MiB = (b) => Math.round((b / 1048576) * 10) / 10;
  const status = () => {
    const o = {};
    for (const l of fs.readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(VmRSS|VmHWM|RssAnon|RssFile|Threads):\s+(\d+)/.exec(l);
      if (m) o[m[1]] = m[1] === 'Threads' ? Number(m[2]) : MiB(Number(m[2]) * 1024);
    }
    return o;
  };
  const smaps = () => {
    const maps = [];
    let cur = null;
    for (const l of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
      if (/^[0-9a-f]+-[0-9a-f]+ /.test(l)) {
        const p = l.split(/\s+/);
        cur = { range: p[0], name: p.slice(5).join(' ') || '[anon]', rssKiB: 0 };
        maps.push(cur);
      } else if (cur && l.startsWith('Rss:')) cur.rssKiB = Number(l.split(/\s+/)[1]);
    }
    const byName = new Map();
    for (const m of maps) {
      const s = byName.get(m.name) ?? { name: m.name, rssMiB: 0, maps: 0 };
      s.rssMiB += m.rssKiB / 1024;
      s.maps++;
      byName.set(m.name, s);
    }
    const largestAnon = maps
      .filter((m) => m.name === '[anon]' && m.rssKiB >= 2048)
      .sort((a, b) => b.rssKiB - a.rssKiB)
      .map((m) => ({ range: m.range, rssMiB: MiB(m.rssKiB * 1024) }));
    return {
      byName: [...byName.values()].sort((a, b) => b.rssMiB - a.rssMiB).slice(0, 12),
      largestAnon,
    };
  };
  // The agent's body pool and kept photos (the same module instances as the agent's: same URLs),
  // when its build has their counters.
  const counters = {};
  const distMain = path.resolve(path.dirname(process.argv[1] ?? '.'), '..');
  const load = (rel, name, key) =>
    import(pathToFileURL(path.join(distMain, rel)).href).then(
      (m) => typeof m[name] === 'function' && (counters[key] = m[name]),
      () => undefined,
    );
  void load('core/storage/body-pool.js', 'bodyPoolStats', 'pool');
  void load('core/sync/kept.js', 'keptStats', 'kept');
  const mibs = (o) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, /Bytes$|^bytes$/.test(k) ? MiB(v) : v]));
  let peak = 0;
  const sample = () => {
    const st = status();
    const mu = process.memoryUsage();
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    const line = {
      t: Math.round(performance.now()),
      ...st,
      main: {
        heapTotal: MiB(mu.heapTotal),
        heapUsed: MiB(mu.heapUsed),
        newSpace: young ? MiB(young.space_size) : null,
        external: MiB(mu.external),
        arrayBuffers: MiB(mu.arrayBuffers),
      },
      workers: [...workers.values()].map((w) => ({ id: w.id, ...w.heap })),
      ...Object.fromEntries(Object.entries(counters).map(([k, f]) => [k, mibs(f())])),
    };
    fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
    if (st.VmRSS > peak + 2) {
      peak = st.VmRSS;
      fs.writeFileSync(`${file}.smaps`, JSON.stringify({ ...line, smaps: smaps() }));
    }
    for (const [w, rec] of workers)
      w.getHeapStatistics().then(
        (h) => {
          rec.heap = {
            total: MiB(h.total_heap_size),
            used: MiB(h.used_heap_size),
            youngLimit: w.resourceLimits?.maxYoungGenerationSizeMb,
          };
        },
        () => undefined,
      );
  };
  setInterval(sample, 250).unref();
}
