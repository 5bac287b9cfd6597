#!/usr/bin/env node
// The agent's memory at its peak of RSS, from a `bench --mem-sample <file>` run:
//   node test/bench/mem-breakdown.mjs <file>.<pid> [until-ms]
// (until-ms: only samples before then, e.g. the time of the local-verdict line).
import fs from 'node:fs';

const [file, until] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: mem-breakdown.mjs <sample file> [until-ms]\n');
  process.exit(2);
}
const lines = fs
  .readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
  .filter((l) => until === undefined || l.t <= Number(until));
const top = lines.reduce((a, b) => (b.VmRSS > a.VmRSS ? b : a));
const sum = (xs) => Math.round(xs.reduce((s, x) => s + (x ?? 0), 0) * 10) / 10;
const w = top.workers;
const out = [
  `peak VmRSS ${top.VmRSS} MiB at ${(top.t / 1000).toFixed(1)} s (${lines.length} samples): anon ${top.RssAnon}, file ${top.RssFile}, ${top.Threads} threads`,
  `main thread heap ${top.main.heapTotal} MiB (used ${top.main.heapUsed}, new space ${top.main.newSpace}), external ${top.main.external}, arrayBuffers ${top.main.arrayBuffers}`,
  `${w.length} workers' heaps ${sum(w.map((x) => x.total))} MiB: ${w
    .map((x) => `#${x.id} ${x.total ?? '?'} (used ${x.used ?? '?'}, young limit ${x.youngLimit ?? '?'})`)
    .join(', ')}`,
  `anon outside the V8 heaps (malloc arenas, Buffers, stacks): ${Math.round(
    top.RssAnon - top.main.heapTotal - sum(w.map((x) => x.total)),
  )} MiB`,
];
if (top.pool)
  out.push(
    `body pool: ${top.pool.liveBytes} MiB in buffers (${top.pool.idleBytes} MiB idle in ${top.pool.idle}; ${top.pool.allocated} allocated so far)`,
  );
if (top.kept)
  out.push(
    `kept photos: ${top.kept.photos}, ${top.kept.bytes} MiB in buffers of ${top.kept.bufferBytes} MiB`,
  );
if (lines.some((l) => l.pool)) {
  const most = (f) => lines.reduce((a, b) => (f(b) > f(a) ? b : a));
  const p = most((l) => l.pool?.liveBytes ?? 0);
  const k = most((l) => l.kept?.bufferBytes ?? 0);
  out.push(
    `most in the pool: ${p.pool.liveBytes} MiB at ${(p.t / 1000).toFixed(1)} s (RSS ${p.VmRSS}); most kept: ${k.kept?.bufferBytes} MiB at ${(k.t / 1000).toFixed(1)} s (RSS ${k.VmRSS})`,
  );
}
try {
  const s = JSON.parse(fs.readFileSync(`${file}.smaps`, 'utf8'));
  out.push(`smaps at ${s.VmRSS} MiB, by mapping:`);
  for (const m of s.smaps.byName.slice(0, 6))
    out.push(`  ${Math.round(m.rssMiB)} MiB ${m.name} (${m.maps} maps)`);
  out.push(
    `  largest anonymous maps (64 MiB-aligned ones are malloc arenas): ${s.smaps.largestAnon
      .slice(0, 12)
      .map((m) => `${m.range.split('-')[0]} ${m.rssMiB}`)
      .join(', ')}`,
  );
} catch {
  // no smaps file: the sample lines only
}
process.stdout.write(`${out.join('\n')}\n`);
