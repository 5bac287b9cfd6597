#!/usr/bin/env node
// Summarises V8 CPU profiles (node --cpu-prof) by self time: per function and
// per package. For profiling the agent under the benchmark:
//   node test/bench/bench.mjs --quick --only small --agent-node-args="--cpu-prof --cpu-prof-dir=/tmp/prof"
//   node test/bench/cpuprofile-top.mjs /tmp/prof/*.cpuprofile
import fs from 'node:fs';

const files = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 25);
if (files.length === 0) {
  console.error('usage: cpuprofile-top.mjs <file.cpuprofile>... [--top=N]');
  process.exit(2);
}

const byFn = new Map();
const byPkg = new Map();
let total = 0;

function pkgOf(url) {
  if (!url) return '(native / vm)';
  if (url.startsWith('node:')) return url.split('/')[0];
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const dist = url.indexOf('/dist/');
  return dist >= 0
    ? url
        .slice(dist + 1)
        .split('/')
        .slice(0, 4)
        .join('/')
    : url;
}

for (const file of files) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const dt = new Map();
  // Self time per node: the time deltas of the samples that landed on it.
  for (let i = 0; i < p.samples.length; i++)
    dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  for (const n of p.nodes) {
    const us = dt.get(n.id) ?? 0;
    if (!us) continue;
    total += us;
    const cf = n.callFrame;
    const where = cf.url
      ? `${cf.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/')}:${cf.lineNumber + 1}`
      : '';
    const fnKey = `${cf.functionName || '(anonymous)'} ${where}`;
    byFn.set(fnKey, (byFn.get(fnKey) ?? 0) + us);
    const pk = pkgOf(cf.url);
    byPkg.set(pk, (byPkg.get(pk) ?? 0) + us);
  }
}

const show = (title, m) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`,
    );
  }
};
console.log(`total sampled: ${(total / 1e6).toFixed(2)} s in ${files.length} profile(s)`);
show('by package', byPkg);
show('by function (self time)', byFn);
