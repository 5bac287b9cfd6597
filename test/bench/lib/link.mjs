// The `link` scenario (issue 31): the built agent and rclone on the same
// shaped link, in the same run, through the link lab (test/link/lab.ts: a
// network namespace behind a veth pair shaped by tc tbf, the reference
// service and its bucket inside, the tools outside). Needs root; says so and
// skips otherwise.
//
//   1. achieved rate / shaped rate at 15 and 8 Mbit/s (goal >= 0.9, rclone's too)
//   2. a timetable's new slot mid-file (rclone --bwlimit syntax, the same
//      timetable for both): rate on the link / the slot's rate, 2-10 s after
//   3. an outage of 5 s and a switch 15 -> 8 Mbit/s mid-file: bytes on the
//      link beyond the file's (and the requests'), in parts re-sent
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeCard, MiB } from './cards.mjs';

const KiB = 1024;

async function timed(cmd, args, env, lab, onStart) {
  const before = lab.sentBytes();
  const t0 = Date.now();
  const s = sampler(lab, 100);
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const side = onStart?.(t0);
  const timer = globalThis.setTimeout(() => child.kill('SIGKILL'), 15 * 60_000);
  const code = await new Promise((r) => child.once('exit', r));
  globalThis.clearTimeout(timer);
  await side;
  s.stop();
  const onLink = lab.sentBytes() - before;
  return {
    code,
    seconds: (Date.now() - t0) / 1000,
    sending: sendingSeconds(s.samples),
    onLink,
    out,
    err: err.slice(-400),
    load: os.loadavg()[0],
  };
}

/**
 * Seconds from the first bytes on the link to the last (64 KiB either end:
 * the requests before and after): the transfer without the tool's start
 * (process, hashing, the server's calls) and its end (callback, manifest).
 */
function sendingSeconds(samples) {
  if (samples.length < 2) return null;
  const base = samples[0].bytes;
  const total = samples[samples.length - 1].bytes - base;
  const first = samples.find((x) => x.bytes - base > 64 * KiB);
  const last = samples.find((x) => x.bytes - base >= total - 64 * KiB);
  return first && last && last.t > first.t ? (last.t - first.t) / 1000 : null;
}

/** Samples the shaped interface's bytes sent every `ms` (sysfs: no process per sample): [{t, bytes}]. */
function sampler(lab, ms = 250) {
  const samples = [];
  const file = `/sys/class/net/${lab.dev}/statistics/tx_bytes`;
  const take = () => samples.push({ t: Date.now(), bytes: Number(fs.readFileSync(file, 'utf8')) });
  take();
  const timer = globalThis.setInterval(take, ms);
  return { samples, stop: () => globalThis.clearInterval(timer) };
}

function rateBetween(samples, from, to) {
  const a = samples.find((s) => s.t >= from);
  const b = [...samples].reverse().find((s) => s.t <= to);
  if (!a || !b || b.t <= a.t) return null;
  return ((b.bytes - a.bytes) * 1000) / (b.t - a.t);
}

/** The rows `--only link` runs; `link-<row>` runs one (link-outage: the 5 min outage, opt-in). */
export const LINK_ROWS = ['rate', 'lane', 'timetable', 'faults', 'latency'];

const hhmm = (d) => `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;

export async function linkScenario({ tmp, bin, quick, log, rclone, rcloneEnv, rows = LINK_ROWS }) {
  const { labMissing, openLab, serveInside, stop } = await import('../../link/lab.ts');
  const missing = labMissing();
  if (missing) {
    log(`link: skipped: ${missing}`);
    return { skipped: missing };
  }
  if (!rclone) log('link: rclone is not available: its figures will be n/a');
  const lab = openLab({ mbit: 15, id: process.pid + 13 });
  let svc = null;
  let cardNo = 0;
  try {
    svc = await serveInside(lab, bin, path.join(tmp, 'link-service'));
    log(`link: service in ${lab.ns} at ${svc.baseUrl}, uplink shaped by tbf on ${lab.dev}`);
    const stsOf = async () => {
      const res = await globalThis.fetch(`${svc.baseUrl}/storage/api/v1/workspaces/${svc.workspaceId}/sts`, {
        method: 'POST',
        headers: { 'x-auth-token': svc.token },
      });
      return (await res.json()).data;
    };
    // A new card each run (other bytes): the server never knows it already.
    const card = (mib) => {
      const n = ++cardNo;
      return makeCard(path.join(tmp, `link-card-${n}`), {
        mission: 'Link',
        seed: `link-${n}-${Date.now()}`,
        groups: [{ count: 1, size: mib * MiB, ext: 'MP4' }],
      });
    };
    const agent = (c, config, onStart) => {
      const state = path.join(tmp, `link-state-${cardNo}`);
      fs.mkdirSync(state, { recursive: true });
      if (config) fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(config));
      return timed(
        process.execPath,
        [
          bin,
          'sync',
          c.root,
          '--server',
          svc.baseUrl,
          '--workspace',
          svc.workspaceId,
          '--state',
          state,
          '--json',
        ],
        { ...process.env, DMS_TOKEN: svc.token },
        lab,
        onStart,
      );
    };
    const rc = async (c, extra, onStart) => {
      if (!rclone) return null;
      const t = await stsOf();
      return timed(
        rclone,
        ['copy', c.root, `bench:${t.bucket}/${t.object_key_prefix}/rclone-${cardNo}/`, ...extra],
        rcloneEnv(t),
        lab,
        onStart,
      );
    };
    const size = quick ? 12 : 48;
    const out = { rates: [], timetable: null, faults: null };

    // 1. Achieved rate / shaped rate.
    for (const mbit of rows.includes('rate') ? [15, 8] : []) {
      lab.shape(mbit);
      const c1 = card(size);
      const a = await agent(c1);
      const c2 = card(size);
      const r = await rc(c2, []);
      const ratio = (x, bytes, s) => (x && x.code === 0 && s ? (bytes * 8) / 1e6 / s / mbit : null);
      out.rates.push({
        mbit,
        mib: size,
        agent: ratio(a, c1.bytes, a.seconds),
        rclone: ratio(r, c2.bytes, r?.seconds),
        agentSending: ratio(a, c1.bytes, a.sending),
        rcloneSending: ratio(r, c2.bytes, r?.sending),
        load: [a.load, r?.load ?? null],
        agentOverhead: a.onLink / c1.bytes,
        rcloneOverhead: r ? r.onLink / c2.bytes : null,
        errors: [a.code ? a.err : null, r?.code ? r.err : null].filter(Boolean),
      });
      log(
        `link: ${mbit} Mbit/s: agent ${a.seconds.toFixed(1)} s (sending ${a.sending?.toFixed(1)} s), rclone ${r?.seconds.toFixed(1) ?? 'n/a'} s (sending ${r?.sending?.toFixed(1) ?? 'n/a'} s); load ${os.loadavg()[0].toFixed(1)}`,
      );
    }
    const overhead = out.rates[0]?.agentOverhead ?? 1.046;

    // 2. A timetable's next slot mid-file: 1 MiB/s, then 256 KiB/s from the next minute.
    if (rows.includes('timetable')) {
      lab.shape(15);
      const slot = async (run) => {
        // Start 6-14 s before a minute begins (bounded: at most a minute's wait).
        for (let i = 0; i < 240 && !(new Date().getSeconds() >= 46 && new Date().getSeconds() <= 52); i++)
          await sleep(250);
        const now = new Date();
        const next = new Date(
          now.getFullYear(),
          now.getMonth(),
          now.getDate(),
          now.getHours(),
          now.getMinutes() + 1,
        );
        const timetable = `${hhmm(now)},1M ${hhmm(next)},256k`;
        const s = sampler(lab);
        const r = await run(timetable);
        s.stop();
        const rate = rateBetween(s.samples, next.getTime() + 2000, next.getTime() + 10_000);
        return {
          timetable,
          ok: r?.code === 0,
          ratio: rate === null ? null : rate / overhead / (256 * KiB),
          err: r?.code ? r.err : undefined,
        };
      };
      // Big enough that neither tool is done before the slot changes (up to 14 s at 1 MiB/s, then 10 s at 256 KiB/s).
      const tAgent = await slot((tt) => agent(card(24), { link: { timetable: tt } }));
      const tRclone = rclone ? await slot((tt) => rc(card(24), ['--bwlimit', tt])) : null;
      out.timetable = { agent: tAgent, rclone: tRclone };
      log(
        `link: timetable slot: agent ${tAgent.ratio?.toFixed(2)}, rclone ${tRclone?.ratio?.toFixed(2) ?? 'n/a'}`,
      );
    }

    // 3. An outage of 5 s at 4 s, a switch 15 -> 8 Mbit/s at 14 s.
    const faults = async (run) => {
      lab.shape(15);
      const c = card(quick ? 24 : 40);
      const r = await run(c, async (t0) => {
        await sleep(Math.max(0, t0 + 4000 - Date.now()));
        await lab.outage(5000);
        await sleep(Math.max(0, t0 + 14_000 - Date.now()));
        lab.shape(8);
      });
      return (
        r && {
          ok: r.code === 0,
          extra: Math.max(0, r.onLink - c.bytes * overhead),
          err: r.code ? r.err : undefined,
        }
      );
    };
    if (rows.includes('faults')) {
      const fAgent = await faults((c, on) => agent(c, null, on));
      const fRclone = await faults((c, on) => rc(c, [], on));
      out.faults = { agent: fAgent, rclone: fRclone, agentPart: 8 * MiB, rclonePart: 5 * MiB };
    }
    return out;
  } finally {
    if (svc) await stop(svc.child);
    lab.close();
  }
}

const f2 = (x) => (x === null || x === undefined ? 'n/a' : x.toFixed(2));

export function linkText(res) {
  if (res.skipped) return `Link scenario skipped: ${res.skipped}.`;
  const lines = [
    '| link (tc tbf in a network namespace) | agent | rclone | goal |',
    '| --- | --- | --- | --- |',
  ];
  for (const r of res.rates) {
    const load = `load ${r.load.map((x) => (x === null ? 'n/a' : x.toFixed(1))).join(' / ')}`;
    lines.push(
      `| achieved ÷ shaped rate, ${r.mbit} Mbit/s, one ${r.mib} MiB video, wall time of the command (${load}) | ${f2(r.agent)} | ${f2(r.rclone)} | ≥ 0.9 |`,
      `| … the same, first byte to last on the link (without the tool's start and end) | ${f2(r.agentSending)} | ${f2(r.rcloneSending)} | ≥ 0.9 |`,
    );
  }
  const t = res.timetable;
  if (t)
    lines.push(
      `| rate ÷ timetable's new slot (1M → 256k mid-file), 2–10 s after | ${f2(t.agent.ratio)} | ${f2(t.rclone?.ratio)} | 0.9–1.1 |`,
    );
  const fa = res.faults;
  const parts = (x, part) =>
    x ? `${(x.extra / part).toFixed(2)} parts (${(x.extra / MiB).toFixed(1)} MiB)` : 'n/a';
  if (fa)
    lines.push(
      `| outage 5 s + 15 → 8 Mbit/s mid-file: re-sent | ${parts(fa.agent, fa.agentPart)} | ${parts(fa.rclone, fa.rclonePart)} | ≤ parts in flight (4) |`,
    );
  const errs = [
    ...res.rates.flatMap((r) => r.errors),
    t?.agent.err,
    t?.rclone?.err,
    fa?.agent?.err,
    fa?.rclone?.err,
  ].filter(Boolean);
  if (errs.length)
    lines.push('', 'Failures:', ...errs.map((e) => `- ${String(e).replace(/\s+/g, ' ').slice(0, 300)}`));
  return lines.join('\n');
}
