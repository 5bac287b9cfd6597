/**
 * Issue 7: the real CLI (`dist/main/cli/bin.js sync`) killed with SIGKILL 20
 * times in a row on one card, at chosen points: while hashing, mid-part,
 * between the upload and the callback, mid-callback (stored, answer lost),
 * and at random times. Then one run to the end.
 *
 * How kills land where they should: the fault proxies see every request, so
 * a kill is fired from a proxy hook at the exact moment (the first
 * fast-upload request of a run = hashing of the other files still going on;
 * half of a part's body received; the bucket's 200 to the last PUT before it
 * is relayed; the callback arriving; the server's answer to the callback
 * before it is relayed). In runs aimed at something else, callbacks are held
 * back by the proxy (never forwarded when their agent dies) so that enough
 * files are left for the callback kills.
 *
 * How re-sent bytes are measured: the bucket proxy logs every UploadPart /
 * PutObject with the bytes of its body and the bucket's status; a body the
 * bucket accepted (200) for a (key, part) that it had accepted before is
 * re-sent work, charged to the kill just before the run that sent it again.
 *
 * The times of the random kills come from a printed seed: DMS_FAULT_SEED=<seed>
 * replays them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runSync, lastJson, type CliRun } from './cli.js';
import { findSecrets, KiB, makeCard, MiB, promiseViolations, queueRows, startRig, type Rig } from './rig.js';
import { faultSeed, intBetween, seededRandom } from '../support/seeded-random.js';

const SEED = faultSeed('kill');
/** Goes with every failure, to replay the run. */
const REPLAY = `fault seed ${SEED}: re-run with DMS_FAULT_SEED=${SEED}`;

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-kill-' });
});
afterAll(async () => {
  await rig?.close();
});

type Phase =
  'hashing' | 'mid-part' | 'after-upload-before-record' | 'before-callback' | 'mid-callback' | 'random';
const PLAN: Phase[] = [
  'hashing',
  'hashing',
  'after-upload-before-record', // a small file's PUT, while they are in flight
  'mid-part',
  'mid-part',
  'before-callback',
  'mid-callback',
  'mid-part',
  'mid-part',
  'mid-callback',
  'before-callback',
  'mid-part',
  'mid-callback',
  'random',
  'mid-part',
  'after-upload-before-record', // a video's CompleteMultipartUpload
  'mid-callback',
  'random',
  'mid-part',
  'random',
];
const PART = 5 * MiB;

interface Kill {
  n: number;
  planned: Phase;
  landed: Phase | 'fallback' | 'exited';
  atMs: number;
  states: Record<string, number>;
  resentBytes: number;
  cutBytes: number;
  /** Bytes the bucket accepted for the first time in the run this kill ended: the progress it made. */
  newBytes: number;
}

const isBody = (r: { op: string }) => r.op === 'UploadPart' || r.op === 'PutObject';

it('SIGKILL 20 times in a row on one card: every file done, byte-identical, one record each, at most one part re-sent per kill', async () => {
  const w = await rig.workspace('kill-storm');
  const card = path.join(rig.dir, 'card');
  const folder = 'DJI_202301011200_001_KillStorm';
  // More than 20 throttled runs can get through, whatever the timing: run 16 alone (waiting for
  // the 64 MiB video's CompleteMultipartUpload) uploads 80-120 MiB at 5 MiB/s. With an 80 MiB
  // video the card could be done before run 20, whose random kill then came after the CLI had
  // exited on its own: 19 kills. What is left (about 100 MiB) goes unthrottled in the last run.
  const files = makeCard(card, folder, [
    ...Array.from({ length: 8 }, (_, i) => ({
      name: `DJI_20230101120000_${String(i + 1).padStart(4, '0')}_W.JPG`,
      size: 300 * KiB + i * 350 * KiB,
    })),
    { name: 'DJI_20230101120100_0009_W.MP4', size: 200 * MiB + 12_345 },
    { name: 'DJI_20230101120200_0010_W.MP4', size: 64 * MiB + 777 },
  ]);
  const state = path.join(rig.dir, 'state');
  fs.mkdirSync(state, { recursive: true });
  // 5 MiB parts, three files and two parts at a time, 5 MiB/s: every run is mid-work when killed.
  const config = { partSizeMiB: 5, concurrency: { files: 3, parts: 2 } };
  fs.writeFileSync(
    path.join(state, 'config.json'),
    JSON.stringify({ ...config, bandwidthLimitKiBps: 5 * 1024 }),
  );
  const queueFile = path.join(state, 'queue.db');
  const kills: Kill[] = [];
  const t0 = Date.now();
  const rand = seededRandom(SEED);

  for (let n = 1; n <= PLAN.length; n++) {
    const tag = `run-${n}`;
    rig.service.tag = tag;
    rig.bucket.tag = tag;
    let planned = PLAN[n - 1]!;
    const rows = queueRows(queueFile);
    // A phase that cannot happen any more (nothing left to hash) becomes a mid-part kill.
    if (planned === 'hashing' && rows.length > 0 && !rows.some((r) => r.state === 'discovered'))
      planned = 'mid-part';
    let cli: CliRun | null = null;
    let landed: Kill['landed'] | null = null;
    let snapshot: Record<string, number> = {};
    const kill = (phase: Phase): void => {
      if (landed || !cli) return;
      landed = phase;
      snapshot = {};
      for (const r of queueRows(queueFile)) snapshot[r.state] = (snapshot[r.state] ?? 0) + 1;
      cli.child.kill('SIGKILL');
    };
    const mine = (r: { tag: string }) => r.tag === tag;
    const acceptedThisRun = () =>
      rig.bucket.records.filter((r) => mine(r) && isBody(r) && r.upstreamStatus === 200).length;
    const rules = [];
    const holdCallbacks = () =>
      // Callbacks are held back (a held request of a killed agent is never forwarded), to keep files for the callback kills.
      rules.push(
        rig.service.inject({
          name: 'hold-callbacks',
          match: (r) => mine(r) && r.op === 'upload-callback',
          fault: { kind: 'delay', ms: 30_000 },
          forMs: 30_000,
        }),
      );
    if (planned !== 'before-callback' && planned !== 'mid-callback' && planned !== 'random') holdCallbacks();
    if (planned === 'hashing') {
      rules.push(
        rig.service.inject({
          name: 'kill-hashing',
          match: (r) => mine(r) && r.op === 'fast-upload',
          fault: { kind: 'pass' },
          hooks: { onArrival: () => kill('hashing') },
          times: 1,
        }),
      );
    } else if (planned === 'mid-part') {
      // Once this run got at least one body accepted (progress), kill half-way through the next
      // one: a multipart part every other time, any body (a small file's PUT too) otherwise.
      const partsOnly = kills.filter((k) => k.planned === 'mid-part').length % 2 === 1;
      rules.push(
        rig.bucket.inject({
          name: 'kill-mid-part',
          match: (r) =>
            mine(r) &&
            (partsOnly ? r.op === 'UploadPart' : isBody(r)) &&
            (r.contentLength ?? 0) >= 64 * KiB &&
            acceptedThisRun() >= 1,
          fault: { kind: 'pass' },
          hooks: { onHalfBody: () => kill('mid-part') },
          times: 1,
        }),
      );
    } else if (planned === 'after-upload-before-record') {
      // The bucket completed the object; the agent dies before it hears so.
      rules.push(
        rig.bucket.inject({
          name: 'kill-after-upload',
          match: (r) => mine(r) && (r.op === 'CompleteMultipartUpload' || r.op === 'PutObject'),
          fault: { kind: 'pass' },
          hooks: {
            beforeRelay: (_r, status) => (status === 200 ? kill('after-upload-before-record') : undefined),
          },
          times: 1,
        }),
      );
    } else if (planned === 'before-callback') {
      // Recorded as uploaded, the callback leaves: the agent dies before the server gets it.
      rules.push(
        rig.service.inject({
          name: 'kill-before-callback',
          match: (r) => mine(r) && r.op === 'upload-callback',
          fault: { kind: 'reset', at: 'arrival' },
          hooks: { onArrival: () => kill('before-callback') },
          times: 1,
        }),
      );
      holdCallbacks(); // the other callbacks of this run (checked after the kill rule)
    } else if (planned === 'mid-callback') {
      // The server stored the callback; the agent dies before the answer reaches it.
      rules.push(
        rig.service.inject({
          name: 'kill-mid-callback',
          match: (r) => mine(r) && r.op === 'upload-callback',
          fault: { kind: 'pass' },
          hooks: { beforeRelay: () => kill('mid-callback') },
          times: 1,
        }),
      );
      holdCallbacks();
    }
    // Drawn for every run (not only the random ones), so that run n gets the same time for a seed whatever happened before.
    const randomAt = intBetween(rand, 300, 2_800);
    const started = Date.now();
    cli = runSync(rig, w, state, [card], { killAfterMs: 40_000 });
    let exited = false;
    void cli.exit.then(() => (exited = true));
    // Wait for the planned kill; a run whose moment never comes is killed after 12 s (recorded as such),
    // 30 s when it waits for a video's CompleteMultipartUpload (a video takes longer than 12 s).
    const patienceMs = planned === 'after-upload-before-record' ? 30_000 : 12_000;
    while (!exited && !landed) {
      const t = Date.now() - started;
      if (planned === 'random' && t >= randomAt) kill('random');
      else if (t > patienceMs) {
        kill('random');
        landed = 'fallback';
      }
      await sleep(5);
    }
    const result = await cli.exit;
    for (const r of rules) r.stop();
    if (!landed) landed = 'exited';
    kills.push({
      n,
      planned,
      landed,
      atMs: Date.now() - started,
      states: snapshot,
      resentBytes: 0,
      cutBytes: 0,
      newBytes: 0,
    });
    if (landed === 'exited') {
      // It finished before it could be killed: nothing left to kill.
      expect(result.code, `${REPLAY}\n${result.stderr}`).toBe(0);
      break;
    }
    expect(result.signal, `run ${n}, ${REPLAY}`).toBe('SIGKILL');
  }

  // The last run, undisturbed and unthrottled.
  fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(config));
  rig.service.tag = 'final';
  rig.bucket.tag = 'final';
  const final = await runSync(rig, w, state, [card], { killAfterMs: 120_000 }).exit;
  expect(final.code, `${REPLAY}\n${final.stdout.slice(-3000)}${final.stderr}`).toBe(0);
  const summary = lastJson(final.stdout)!;
  expect(summary['pending'], REPLAY).toBe(0);
  expect(summary['failed'], REPLAY).toBe(0);

  // Re-sent bytes, charged to the kill before the run that sent them again.
  const firstAccepted = new Set<string>();
  let finalNewBytes = 0;
  const runIndex = (tag: string) => (tag === 'final' ? kills.length + 1 : Number(tag.slice(4)));
  for (const r of rig.bucket.records) {
    if (!isBody(r)) continue;
    const idx = runIndex(r.tag);
    if (r.upstreamStatus === 200 && r.upstreamCompleted) {
      const id = `${r.key}#${r.partNumber ?? 0}`;
      if (firstAccepted.has(id)) {
        const k = kills[idx - 2];
        if (k) k.resentBytes += r.requestBytes;
      } else {
        firstAccepted.add(id);
        if (kills[idx - 1]) kills[idx - 1]!.newBytes += r.requestBytes;
        else finalNewBytes += r.requestBytes;
      }
    } else if (!r.upstreamCompleted && kills[idx - 1]) {
      kills[idx - 1]!.cutBytes += r.requestBytes; // bodies cut by this kill (never accepted)
    }
  }
  const byPhase: Record<string, number> = {};
  for (const k of kills) byPhase[k.landed] = (byPhase[k.landed] ?? 0) + 1;
  console.log(
    `kill storm (fault seed ${SEED}): ${kills.length} kills in ${((Date.now() - t0) / 1000).toFixed(1)} s; landed: ${JSON.stringify(byPhase)}; left for the final run ${(finalNewBytes / MiB).toFixed(2)} MiB (${(final.ms / 1000).toFixed(1)} s)`,
  );
  for (const k of kills) {
    console.log(
      `  kill ${String(k.n).padStart(2)} planned ${k.planned.padEnd(27)} landed ${String(k.landed).padEnd(27)} at ${String(k.atMs).padStart(5)} ms  queue ${JSON.stringify(k.states)}  new ${(k.newBytes / MiB).toFixed(2).padStart(5)} MiB  re-sent ${(k.resentBytes / MiB).toFixed(2)} MiB  cut ${(k.cutBytes / MiB).toFixed(2)} MiB`,
    );
  }

  const { violations } = await promiseViolations({ rig, w, files, queueFile, oneCallbackEach: true });
  expect(violations, REPLAY).toEqual([]);
  expect(
    kills.filter((k) => k.landed !== 'exited'),
    REPLAY,
  ).toHaveLength(PLAN.length);
  // Kills landed where they were meant to.
  expect(byPhase['hashing'] ?? 0, REPLAY).toBeGreaterThanOrEqual(1);
  expect(kills.find((k) => k.landed === 'hashing')!.states['discovered'] ?? 0, REPLAY).toBeGreaterThan(0);
  expect(byPhase['mid-part'] ?? 0, REPLAY).toBeGreaterThanOrEqual(6);
  expect(
    (byPhase['after-upload-before-record'] ?? 0) + (byPhase['before-callback'] ?? 0),
    REPLAY,
  ).toBeGreaterThanOrEqual(3);
  expect(byPhase['mid-callback'] ?? 0, REPLAY).toBeGreaterThanOrEqual(3);
  // At most one part re-sent per kill.
  for (const k of kills)
    expect(k.resentBytes, `bytes re-sent after kill ${k.n} (${k.landed}), ${REPLAY}`).toBeLessThanOrEqual(
      PART,
    );
  // Nothing the agent wrote holds the token or an STS secret.
  expect(findSecrets([state], rig.secrets), REPLAY).toEqual([]);
}, 600_000);
