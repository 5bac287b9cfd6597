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
import { Buffer } from 'node:buffer';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeCard, MiB } from './cards.mjs';

const KiB = 1024;

/**
 * Waits (at most 30 s) until the link is quiet: a killed tool's sockets
 * still send what they held (the lane row kills rclone mid-copy), which the
 * next run would share the link with.
 */
async function quiet(lab) {
  const file = `/sys/class/net/${lab.dev}/statistics/tx_bytes`;
  let last = Number(fs.readFileSync(file, 'utf8'));
  for (let i = 0; i < 60; i++) {
    await sleep(500);
    const now = Number(fs.readFileSync(file, 'utf8'));
    if (now - last < 16 * KiB) return;
    last = now;
  }
}

async function timed(cmd, args, env, lab, onStart, fileBytes) {
  await quiet(lab);
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
  // The link's bytes over the run, for a look at where the time went.
  if (process.env.DMS_LINK_SAMPLES)
    fs.writeFileSync(
      `${process.env.DMS_LINK_SAMPLES}-${path.basename(cmd)}-${t0}.json`,
      JSON.stringify(s.samples.map((x) => [x.t - t0, x.bytes - s.samples[0].bytes])),
    );
  const onLink = lab.sentBytes() - before;
  return {
    code,
    seconds: (Date.now() - t0) / 1000,
    sending: sendingSeconds(s.samples, fileBytes),
    onLink,
    out,
    err: err.slice(-400),
    load: os.loadavg()[0],
  };
}

/**
 * Seconds from the first bytes on the link (64 KiB: past the requests
 * before) to the file's last (1.03 x its bytes, with TCP/IP's headers; or
 * all but 64 KiB): the transfer without the tool's start (process, hashing,
 * the server's calls) and its end (complete, callback, manifests).
 */
function sendingSeconds(samples, fileBytes) {
  if (samples.length < 2) return null;
  const base = samples[0].bytes;
  const total = samples[samples.length - 1].bytes - base;
  const end = Math.min(total - 64 * KiB, (fileBytes ?? Infinity) * 1.03);
  const first = samples.find((x) => x.bytes - base > 64 * KiB);
  const last = samples.find((x) => x.bytes - base >= end);
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
  const { labMissing, openLab, serveInside, stop, delayProxy, objectSizes } =
    await import('../../link/lab.ts');
  const missing = labMissing();
  if (missing) {
    log(`link: skipped: ${missing}`);
    return { skipped: missing };
  }
  if (!rclone) log('link: rclone is not available: its figures will be n/a');
  const lab = openLab({ mbit: 15, id: process.pid + 13 });
  let svc = null;
  let cardNo = 0;
  // Stopped (the bench's SIGTERM/SIGINT handler exits): the namespace and the service go too.
  const onExit = () => {
    svc?.child.kill('SIGKILL');
    lab.close();
  };
  process.once('exit', onExit);
  try {
    const svcDir = path.join(tmp, 'link-service');
    // On the namespace's addresses (the latency proxy's bucket endpoint), its request log kept (callbacks counted).
    svc = await serveInside(lab, bin, svcDir, { anyAddress: true, log: true });
    const callbacks = /^POST \/media\/api\/v1\/workspaces\/[^/]+\/upload-callback$/;
    const objectsOfSize = (bytes) => objectSizes(svcDir, svc.workspaceId).filter((n) => n === bytes).length;
    log(`link: service in ${lab.ns} at ${svc.baseUrl}, uplink shaped by tbf on ${lab.dev}`);
    const stsOf = async (server = svc.baseUrl) => {
      const res = await globalThis.fetch(`${server}/storage/api/v1/workspaces/${svc.workspaceId}/sts`, {
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
    const agent = (c, config, onStart, server = svc.baseUrl) => {
      const state = path.join(tmp, `link-state-${cardNo}`);
      fs.mkdirSync(state, { recursive: true });
      if (config) fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(config));
      return timed(
        process.execPath,
        [bin, 'sync', c.root, '--server', server, '--workspace', svc.workspaceId, '--state', state, '--json'],
        { ...process.env, DMS_TOKEN: svc.token },
        lab,
        onStart,
        c.bytes,
      );
    };
    const rc = async (c, extra, onStart, server = svc.baseUrl) => {
      if (!rclone) return null;
      const t = await stsOf(server);
      return timed(
        rclone,
        ['copy', c.root, `bench:${t.bucket}/${t.object_key_prefix}/rclone-${cardNo}/`, ...extra],
        rcloneEnv(t),
        lab,
        onStart,
        c.bytes,
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

    // 3. Faults mid-file: an outage of 5 s (or 5 min, opt-in: link-outage) 4 s in, a switch 15 -> 8 Mbit/s
    // 6 s in. Re-sent: bytes on the link beyond a clean run's (the file x the overhead measured in row 1),
    // in parts; duplicates: objects of the file's size beyond one; second callbacks: the service's log.
    // `again`: a run that gave up (the agent's one-shot `sync` stops when the server stays unreachable,
    // the queue keeping the rest) is run once more, as a crew would; both runs' bytes count.
    const fault = async (name, what, run, again) => {
      lab.shape(15);
      const c = card(quick ? 24 : 40);
      const cbBefore = svc.answered(callbacks);
      const objectsBefore = objectsOfSize(c.bytes);
      const r = await run(c, what);
      if (!r) return null;
      const said = r.code ? `${r.out.trim().split('\n').pop() ?? ''} ${r.err}`.slice(-300) : null;
      const r2 = r.code && again ? await again(c) : null;
      const last = r2 ?? r;
      return {
        ok: last.code === 0,
        runs: r2 ? 2 : 1,
        said,
        extra: Math.max(0, r.onLink + (r2?.onLink ?? 0) - c.bytes * overhead),
        duplicates: objectsOfSize(c.bytes) - objectsBefore - 1,
        callbacks: svc.answered(callbacks) - cbBefore,
        load: r.load,
        err: last.code ? last.err : undefined,
      };
    };
    const outage = (ms) => async (t0) => {
      await sleep(Math.max(0, t0 + 4000 - Date.now()));
      await lab.outage(ms);
    };
    const rateSwitch = async (t0) => {
      await sleep(Math.max(0, t0 + 6000 - Date.now()));
      lab.shape(8);
    };
    const faultRows = [
      ...(rows.includes('faults')
        ? [
            ['outage 5 s', outage(5000)],
            ['15 → 8 Mbit/s', rateSwitch],
          ]
        : []),
      ...(rows.includes('outage') ? [['outage 5 min', outage(5 * 60_000)]] : []),
    ];
    out.faults = [];
    for (const [name, what] of faultRows) {
      const fa = await fault(
        name,
        what,
        (c, on) => agent(c, null, on),
        (c) => agent(c, null),
      );
      if (fa?.runs === 2) log(`link: ${name}: the agent's sync gave up (${fa.said}); run again`);
      const fr = await fault(name, what, (c, on) => rc(c, [], on));
      out.faults.push({ name, agent: fa, rclone: fr, agentPart: 8 * MiB, rclonePart: 5 * MiB });
      log(
        `link: ${name}: agent re-sent ${(fa.extra / MiB).toFixed(1)} MiB, rclone ${fr ? (fr.extra / MiB).toFixed(1) : 'n/a'} MiB`,
      );
    }
    lab.shape(15);

    // 4. A new card's first lane, with an older card's videos uploading, at 8 Mbit/s.
    if (rows.includes('lane'))
      out.lane = await laneRow({ lab, tmp, bin, svc, quick, log, rclone, rcloneEnv, stsOf });

    // 5. A long round trip: 300 ms each way (the latency proxy), 8 Mbit/s.
    if (rows.includes('latency')) {
      lab.shape(8);
      const proxy = await delayProxy(lab, svc.ports, 300);
      try {
        const server = `http://${proxy.host}:${svc.ports[0]}`;
        const mib = quick ? 12 : 24;
        const c1 = card(mib);
        const a = await agent(c1, null, undefined, server);
        const c2 = card(mib);
        const r = await rc(c2, [], undefined, server);
        const ratio = (x, bytes, sec) => (x && x.code === 0 && sec ? (bytes * 8) / 1e6 / sec / 8 : null);
        out.latency = {
          mib,
          agent: ratio(a, c1.bytes, a.seconds),
          rclone: ratio(r, c2.bytes, r?.seconds),
          agentSending: ratio(a, c1.bytes, a.sending),
          rcloneSending: ratio(r, c2.bytes, r?.sending),
          load: [a.load, r?.load ?? null],
          errors: [a.code ? a.err : null, r?.code ? r.err : null].filter(Boolean),
        };
        log(
          `link: 300 ms each way: agent ${a.seconds.toFixed(1)} s (sending ${a.sending?.toFixed(1)} s, ${(a.onLink / c1.bytes).toFixed(3)} x its bytes), rclone ${r?.seconds.toFixed(1) ?? 'n/a'} s (sending ${r?.sending?.toFixed(1) ?? 'n/a'} s, ${r ? (r.onLink / c2.bytes).toFixed(3) : 'n/a'} x)`,
        );
      } finally {
        await proxy.close();
        lab.shape(15);
      }
    }
    return out;
  } finally {
    process.off('exit', onExit);
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
  const parts = (x, part) =>
    x ? `${(x.extra / part).toFixed(2)} parts (${(x.extra / MiB).toFixed(1)} MiB)` : 'n/a';
  const once = (x, cb) =>
    x
      ? `; ${x.duplicates} duplicate objects${cb ? `, ${x.callbacks - 1} second callbacks` : ''}${x.runs === 2 ? ' (a second sync: the first gave up)' : ''}${x.ok ? '' : ' (FAILED)'}`
      : '';
  for (const f of res.faults ?? [])
    lines.push(
      `| ${f.name} mid-file (${f.name.includes('Mbit') ? '6' : '4'} s in, one video, load ${f.agent?.load.toFixed(1)}): re-sent beyond a clean run | ${parts(f.agent, f.agentPart)}${once(f.agent, true)} | ${parts(f.rclone, f.rclonePart)}${once(f.rclone, false)} | ≤ parts in flight (2), 0 duplicates, 0 second callbacks |`,
    );
  const l = res.lane;
  const sec = (x) => (x?.seconds === null || x?.seconds === undefined ? 'n/a' : `${x.seconds.toFixed(1)} s`);
  if (l)
    lines.push(
      `| a new card ready → its flight logs in the workspace, ${l.oldVideos} videos of an older card uploading, 8 Mbit/s (load ${l.load.map((x) => x.toFixed(1)).join(' / ')}) | ${sec(l.agent)} | ${sec(l.rclone)} (second \`copy --order-by size,ascending\`) | ≤ 20 s |`,
    );
  const lt = res.latency;
  if (lt)
    lines.push(
      `| achieved ÷ shaped rate, 8 Mbit/s + 300 ms each way (latency proxy), one ${lt.mib} MiB video, wall (load ${lt.load.map((x) => (x === null ? 'n/a' : x.toFixed(1))).join(' / ')}) | ${f2(lt.agent)} | ${f2(lt.rclone)} | ≥ 0.9 |`,
      `| … the same, first byte to last on the link | ${f2(lt.agentSending)} | ${f2(lt.rcloneSending)} | ≥ 0.9 |`,
    );
  const errs = [
    ...res.rates.flatMap((r) => r.errors),
    t?.agent.err,
    t?.rclone?.err,
    ...(res.faults ?? []).flatMap((f) => [f.agent?.err, f.rclone?.err]),
    l?.agent?.err,
    ...(lt?.errors ?? []),
  ].filter(Boolean);
  if (errs.length)
    lines.push('', 'Failures:', ...errs.map((e) => `- ${String(e).replace(/\s+/g, ' ').slice(0, 300)}`));
  return lines.join('\n');
}

const FIXTURE_SRT = path.resolve(
  path.dirname(new URL(import.meta.url).pathname),
  '../../fixtures/dji/SRT/p4_rtk.SRT',
);

/**
 * A new card (flight logs, photos, a video), written beside and moved into
 * place at once (the card "ready"); its first lane: the flight logs.
 */
function newCard(root, seed) {
  const staging = `${root}.writing`;
  const c = makeCard(staging, {
    mission: 'New',
    seed,
    start: '2024-01-02T09:00:00Z',
    groups: [
      { count: 2, size: 6 * MiB, ext: 'JPG' },
      { count: 1, size: 12 * MiB, ext: 'MP4' },
    ],
  });
  const folder = path.dirname(c.files[0].path);
  const srt = fs.readFileSync(FIXTURE_SRT);
  const logs = [1, 2, 3].map((i) => {
    const name = `DJI_20240102090${i}00_000${i + 3}_W.SRT`;
    fs.writeFileSync(path.join(folder, name), Buffer.concat([srt, Buffer.from(`\n${seed} ${i}\n`)]));
    return name;
  });
  return { ready: () => fs.renameSync(staging, root), logs };
}

/**
 * Row 4: the time from a new card being ready to its first lane (the flight
 * logs) in the workspace while an older card's videos upload, at 8 Mbit/s.
 * The agent: one `watch` of both folders (the new one not there yet), the
 * time each file was done read from its queue. rclone: `copy` of the old
 * card running, then `copy` of the new one with `--order-by size,ascending`
 * (small files first, its best for this), the time of each "Copied" line.
 */
async function laneRow({ lab, tmp, bin, svc, quick, log, rclone, rcloneEnv, stsOf }) {
  lab.shape(8);
  const { default: Database } = await import('better-sqlite3');
  const videos = quick ? 3 : 4;
  const old = (name) =>
    makeCard(path.join(tmp, name), {
      mission: 'Old',
      seed: `${name}-${Date.now()}`,
      groups: [{ count: videos, size: 24 * MiB, ext: 'MP4' }],
    });
  const WAIT_FIRST = 15_000; // the old card's videos hold the link by then
  const BOUND = 120_000;
  const result = { agent: null, rclone: null, oldVideos: videos, load: [] };

  // The agent.
  {
    const oldCard = old('lane-old-agent');
    const root = path.join(tmp, 'lane-new-agent');
    const nc = newCard(root, `lane-agent-${Date.now()}`);
    const state = path.join(tmp, 'lane-state-agent');
    fs.mkdirSync(state, { recursive: true });
    const child = spawn(
      process.execPath,
      [bin, 'watch', oldCard.root, root, '--server', svc.baseUrl, '--workspace', svc.workspaceId, '--json'],
      {
        env: { ...process.env, DMS_TOKEN: svc.token, DMS_STATE_DIR: state },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let err = '';
    child.stderr.on('data', (d) => (err = (err + d).slice(-2000)));
    try {
      await sleep(WAIT_FIRST);
      const ready = Date.now();
      nc.ready();
      let db = null;
      let seconds = null;
      let videosDone = null;
      for (let i = 0; i < BOUND / 250 && child.exitCode === null; i++) {
        await sleep(250);
        try {
          db ??= new Database(path.join(state, 'queue.db'), { readonly: true, fileMustExist: true });
          const rows = db
            .prepare('SELECT rel_path, state, done_at FROM files WHERE abs_path LIKE ?')
            .all(`${root}%`);
          const logs = rows.filter((r) => nc.logs.some((l) => r.rel_path.endsWith(l)));
          if (logs.length === nc.logs.length && logs.every((r) => r.state === 'done' && r.done_at)) {
            seconds = (Math.max(...logs.map((r) => r.done_at)) - ready) / 1000;
            videosDone = db
              .prepare("SELECT count(*) AS n FROM files WHERE abs_path LIKE ? AND state = 'done'")
              .get(`${oldCard.root}%`).n;
            break;
          }
        } catch {
          // The queue not made yet, or busy: look again.
        }
      }
      db?.close();
      result.agent = { seconds, videosDone, err: seconds === null ? err.slice(-400) : undefined };
      result.load.push(os.loadavg()[0]);
    } finally {
      child.kill('SIGTERM');
      const timer = globalThis.setTimeout(() => child.kill('SIGKILL'), 10_000);
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      globalThis.clearTimeout(timer);
    }
  }

  // rclone.
  if (rclone) {
    const oldCard = old('lane-old-rclone');
    const root = path.join(tmp, 'lane-new-rclone');
    const nc = newCard(root, `lane-rclone-${Date.now()}`);
    const t = await stsOf();
    const dest = (n) => `bench:${t.bucket}/${t.object_key_prefix}/rclone-lane-${n}/`;
    const first = spawn(rclone, ['copy', oldCard.root, dest('old')], { env: rcloneEnv(t), stdio: 'ignore' });
    try {
      await sleep(WAIT_FIRST);
      const ready = Date.now();
      nc.ready();
      const second = spawn(rclone, ['copy', root, dest('new'), '--order-by', 'size,ascending', '-v'], {
        env: rcloneEnv(t),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const copied = new Map();
      let buf = '';
      second.stderr.on('data', (d) => {
        buf += d;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const name = nc.logs.find((l) => line.includes(`${l}: Copied`));
          if (name) copied.set(name, Date.now());
        }
      });
      for (let i = 0; i < BOUND / 250 && copied.size < nc.logs.length && second.exitCode === null; i++)
        await sleep(250);
      const seconds = copied.size === nc.logs.length ? (Math.max(...copied.values()) - ready) / 1000 : null;
      second.kill('SIGKILL');
      result.rclone = { seconds, videosDone: first.exitCode === null ? 'still copying' : 'done' };
      result.load.push(os.loadavg()[0]);
    } finally {
      first.kill('SIGKILL');
    }
  }
  log(
    `link: first lane of a new card: agent ${result.agent?.seconds ?? 'n/a'} s, rclone ${result.rclone?.seconds ?? 'n/a'} s after ready`,
  );
  lab.shape(15);
  return result;
}
