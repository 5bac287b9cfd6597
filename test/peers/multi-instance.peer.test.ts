/**
 * Issue 24's deployment under faults: PostgreSQL 15, two `serve` instances
 * (the real CLI) on it with Ceph RGW as their bucket, HAProxy in front, three
 * real agents (`drone-media-sync sync`, token in DMS_TOKEN) syncing cards
 * through HAProxy at once. Mid-run one instance is killed with SIGKILL, later
 * PostgreSQL is restarted, both while every agent still has files to do.
 * Then the database is counted: every file of every card has exactly one
 * callback record, none lost, none twice.
 *
 * What to expect of the time: a callback whose answer was a 5xx (PostgreSQL
 * stopped under it) may have been recorded, so the agent asks again no sooner
 * than its settle time (callbackSettleSeconds, 60 s by default): a run takes
 * a minute and some seconds. When an agent does not finish, the failure says
 * what each agent, HAProxy and the instance did (their logs and the timeline).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import type { PgCluster } from '../support/postgres.js';
import { queueRows, runSync, type CliRun, type Summary } from './ceph/peer.js';
import { startDeployment, type Deployment, type Haproxy, type Instance } from './deployment.js';

const AGENTS = 3;
const FILES_PER_CARD = 120;
const FILES = AGENTS * FILES_PER_CARD;
/** After PostgreSQL is back, each agent has this long to finish (a settle time of 60 s and the rest). */
const AGENT_DEADLINE_MS = 150_000;

let d: Deployment;
let dir: string;
let pg: PgCluster;
let database: string;
let instances: Instance[];
let lb: Haproxy;

beforeAll(async () => {
  // Each request and each database event in its log, for the diagnosis of a failure.
  d = await startDeployment('multi', { env: { DMS_LOG_LEVEL: 'info' } });
  ({ dir, pg, database, instances, lb } = d);
}, 180_000);

afterAll(() => d?.stop());

/** A card of `n` distinct small photos (random bytes) in one flight folder. */
function card(name: string, n: number): string {
  const root = path.join(dir, name);
  const folder = path.join(root, 'DCIM', `DJI_20240301080${name.at(-1)}_001_Multi`);
  fs.mkdirSync(folder, { recursive: true });
  for (let i = 0; i < n; i++) {
    fs.writeFileSync(
      path.join(folder, `DJI_20240301080000_${String(i + 1).padStart(4, '0')}_W.JPG`),
      randomBytes(48 * 1024 + i),
    );
  }
  return root;
}

const callbackCount = async (): Promise<number> =>
  Number(
    (
      await pg.query<{ n: string }>("SELECT count(*) AS n FROM media WHERE source = 'callback'", [], database)
    )[0]!.n,
  );

/** Modes in which the instances' connections hold the instance lock now (one per live instance). */
const instanceLocks = async (): Promise<string[]> =>
  (
    await pg.query<{ mode: string }>(
      `SELECT l.mode FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()
         AND a.application_name = 'drone-media-sync instance lock'`,
      [],
      database,
    )
  ).map((r) => r.mode);

async function waitFor(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** What happened when (seconds since the agents started), for the log line and a failure's diagnosis. */
const timeline: string[] = [];
let t0 = 0;
const mark = (what: string) => timeline.push(`${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`);

/** The last `n` lines of a log, pino's JSON lines shortened to when (s since the agents started) and what. */
function tail(text: string, n: number, skip?: RegExp): string {
  const lines = text.split('\n').filter((l) => l.trim() && !skip?.test(l));
  return lines
    .slice(-n)
    .map((l) => {
      try {
        const { time, msg, ...rest } = JSON.parse(l) as { time: number; msg: string; [k: string]: unknown };
        const what = msg === 'request completed' ? JSON.stringify(rest.res) : msg;
        return `  ${((time - t0) / 1000).toFixed(1)} s ${String(what).slice(0, 200)}`;
      } catch {
        return `  ${l.slice(0, 250)}`;
      }
    })
    .join('\n');
}

/** Everything a person needs to see why an agent did not finish. */
function diagnosis(runs: CliRun[], states: string[]): string {
  const agents = runs.map((run, i) => {
    const counts: Record<string, number> = {};
    for (const row of queueRows(states[i]!)) counts[row.state] = (counts[row.state] ?? 0) + 1;
    return (
      `agent ${i + 1} (exit ${run.child.exitCode ?? 'none yet'}), queue ${JSON.stringify(counts)}, ` +
      `its last log lines:\n${tail(run.log(), 6)}`
    );
  });
  return [
    `timeline:\n${timeline.join('\n')}`,
    ...agents,
    `HAProxy, last lines:\n${tail(lb.log(), 12)}`,
    `instance i1, last lines but readiness checks:\n${tail(instances[0]!.log(), 12, /readyz|"reqId":"req-[^"]*","res"/)}`,
  ].join('\n\n');
}

/** The run's end, or a failure that says what each part was doing. */
async function finished(run: CliRun, runs: CliRun[], states: string[]) {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `an agent did not finish within ${AGENT_DEADLINE_MS / 1000} s of PostgreSQL's restart\n\n` +
              diagnosis(runs, states),
          ),
        ),
      AGENT_DEADLINE_MS,
    );
  });
  try {
    return await Promise.race([run.done, late]);
  } finally {
    clearTimeout(timer);
  }
}

it('SIGKILL of one instance and a PostgreSQL restart mid-run: every file recorded exactly once', async () => {
  const [first] = instances;
  const crew = { ws: first!.workspaceId, token: first!.token };
  // The second instance printed its own dev token (its own data dir) and did not revoke the first's.
  expect(instances[1]!.workspaceId).toBe(crew.ws);
  // Both hold the instance lock, shared (an external bucket each).
  expect(await instanceLocks()).toEqual(['ShareLock', 'ShareLock']);
  const via = { baseUrl: lb.url };
  const cards = Array.from({ length: AGENTS }, (_, i) => card(`card${i + 1}`, FILES_PER_CARD));
  const states = cards.map((_, i) => {
    const s = path.join(dir, `state${i + 1}`);
    fs.mkdirSync(s);
    return s;
  });
  // Each failed step in the agents' logs (stderr), for a failure's diagnosis.
  const agentEnv = { DMS_LOG_LEVEL: 'info' };
  t0 = Date.now();
  const runs = cards.map((c, i) => runSync(via, crew, states[i]!, c, agentEnv));
  const running = () => runs.filter((r) => r.child.exitCode === null).length;

  await waitFor('a first share of callbacks', async () => (await callbackCount()) >= 20);
  instances[1]!.child.kill('SIGKILL');
  const killedAt = await callbackCount();
  mark(`SIGKILL of i2 after ${killedAt} callbacks`);

  await waitFor(
    'more callbacks through the surviving instance',
    async () => (await callbackCount()) >= killedAt + 20,
  );
  const beforeStop = await callbackCount();
  await pg.stopServer();
  mark(`PostgreSQL stopped after ${beforeStop} callbacks, ${running()} agents running`);
  // Mid-run for real: every agent is at work, a good share of the files not recorded yet.
  expect(running()).toBe(AGENTS);
  expect(FILES - beforeStop).toBeGreaterThanOrEqual(FILES / 3);
  // While PostgreSQL is down: the instance answers the contract's envelope, 503001; HAProxy, once
  // its checks fail, its JSON page (503003). Nothing else, never a hang.
  const direct = await fetch(`${first!.baseUrl}/wayline/api/v1/workspaces/${crew.ws}/waylines`, {
    headers: { 'x-auth-token': crew.token },
  });
  expect(direct.status).toBe(503);
  expect(await direct.json()).toMatchObject({ code: CODES.DATABASE_UNAVAILABLE });
  const viaLb = await fetch(`${lb.url}/wayline/api/v1/workspaces/${crew.ws}/waylines`, {
    headers: { 'x-auth-token': crew.token },
  });
  expect(viaLb.status).toBe(503);
  expect([CODES.DATABASE_UNAVAILABLE, CODES.NO_INSTANCE_READY]).toContain(
    ((await viaLb.json()) as { code: number }).code,
  );
  await sleep(2_000);
  await pg.startServer();
  mark('PostgreSQL started again');
  // The service recovers by itself: no restart of the instance.
  await waitFor(
    'the instance ready again',
    async () => (await fetch(`${first!.baseUrl}/readyz`)).status === 200,
    30_000,
  );
  mark('i1 ready again');
  // ...and holds its instance lock again (the restart ended the session that held it).
  await waitFor('the instance lock taken again', async () => (await instanceLocks()).length === 1, 30_000);
  expect(await instanceLocks()).toEqual(['ShareLock']);

  // Every agent finishes (a crew runs sync again when it reports files still pending).
  const summaries: Summary[] = [];
  for (const [i, run] of runs.entries()) {
    let { code, out, err } = await finished(run, runs, states);
    mark(`agent ${i + 1} exited with ${code}`);
    for (let again = 0; code !== 0 && again < 3; again++) {
      ({ code, out, err } = await runSync(via, crew, states[i]!, cards[i]!).done);
      mark(`agent ${i + 1} run again: exit ${code}`);
    }
    expect(code, `${out}\n${err}`).toBe(0);
    summaries.push(JSON.parse(out.trim().split('\n').at(-1)!) as Summary);
  }

  // Counted in the database: one callback record per file, none twice, none missing.
  const rows = await pg.query<{ name: string; path: string; n: string }>(
    `SELECT name, path, count(*) AS n FROM media WHERE workspace_id = $1 AND source = 'callback' GROUP BY name, path`,
    [crew.ws],
    database,
  );
  const twice = rows.filter((r) => Number(r.n) !== 1);
  console.log(
    `multi-instance: ${AGENTS} agents, ${FILES} files; records ${rows.length}, twice ${twice.length}\n  ` +
      timeline.join('\n  '),
  );
  expect(twice).toEqual([]);
  expect(rows).toHaveLength(FILES);
  expect(await callbackCount()).toBe(FILES);
  // Nothing recorded as failed either.
  expect((await pg.query('SELECT 1 FROM media WHERE result <> 0', [], database)).length).toBe(0);
}, 240_000);
