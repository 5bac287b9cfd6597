/**
 * Issue 7, outages (`npm run test:faults` only): service and bucket refused,
 * HTTP 5xx, 429 with Retry-After, answers past the timeout, connection
 * resets, one after the other while a card syncs. First compressed to
 * seconds (backoff 200 ms..1.5 s), then about two minutes (24 s each, 1 s
 * doubling to a 20 s cap; the engine takes a BackoffPolicy, the CLI has no
 * setting for it). The queue waits (never scheduling a retry past the cap),
 * sends no storm, and finishes once everything is back, with no duplicate.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectCappedAndRecovered, runOutage } from './outage.js';
import { findSecrets, startRig, type Rig } from './rig.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-outage-slow-' });
});
afterAll(async () => {
  await rig?.close();
});

it('every kind of outage in a row, compressed (about 12 s): waits with capped backoff, finishes once back, no duplicates', async () => {
  const backoff = { baseMs: 200, capMs: 1_500 };
  const report = await runOutage({
    rig,
    name: 'compressed',
    backoff,
    timeoutMs: 800,
    phases: [
      { kind: 'refused', ms: 2_500 },
      { kind: 'http-5xx', ms: 2_500 },
      { kind: 'throttled-429', ms: 2_000 },
      { kind: 'slow-past-timeout', ms: 2_500 },
      { kind: 'resets', ms: 2_500 },
    ],
  });
  console.log('outage (compressed):', JSON.stringify(report));
  for (const p of report.phases) expect(p.faults, `${p.kind} was injected`).toBeGreaterThan(0);
  expectCappedAndRecovered(report, backoff);
  expect(Object.keys(report.errorKinds).sort()).toEqual(
    expect.arrayContaining(['network', 'server', 'throttled', 'timeout']),
  );
  expect(
    findSecrets(
      [path.join(rig.dir, 'state-compressed')].filter((d) => fs.existsSync(d)),
      rig.secrets,
    ),
  ).toEqual([]);
}, 120_000);

it('two minutes of outages of every kind: capped backoff, recovery within one cap, no duplicates', async () => {
  const backoff = { baseMs: 1_000, capMs: 20_000 };
  const report = await runOutage({
    rig,
    name: 'minutes',
    backoff,
    timeoutMs: 5_000,
    phases: [
      { kind: 'refused', ms: 24_000 },
      { kind: 'http-5xx', ms: 24_000 },
      { kind: 'throttled-429', ms: 24_000 },
      { kind: 'slow-past-timeout', ms: 24_000 },
      { kind: 'resets', ms: 24_000 },
    ],
  });
  console.log('outage (minutes):', JSON.stringify(report, null, 2));
  for (const p of report.phases.slice(1)) expect(p.faults, `${p.kind} was injected`).toBeGreaterThan(0);
  expectCappedAndRecovered(report, backoff);
  expect(
    findSecrets(
      [path.join(rig.dir, 'state-minutes')].filter((d) => fs.existsSync(d)),
      rig.secrets,
    ),
  ).toEqual([]);
}, 600_000);
