/**
 * Issue 24's deployment under faults: PostgreSQL 15, two `serve` instances
 * (the real CLI) on it with Ceph RGW as their bucket, HAProxy in front, three
 * real agents (`drone-media-sync sync`, token in DMS_TOKEN) syncing cards
 * through HAProxy at once. Mid-run one instance is killed with SIGKILL, later
 * PostgreSQL is restarted. Then the database is counted: every file of every
 * card has exactly one callback record, none lost, none twice.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import { tempDir } from '../support/harness.js';
import { startPostgres, type PgCluster } from '../support/postgres.js';
import { rgwBucketConfig, runSync, type Summary } from './ceph/peer.js';
import { startRgw, type Rgw } from './ceph/rgw.js';
import { freePorts } from './ceph/daemons.js';
import { startHaproxy, startInstance, stopInstance, type Haproxy, type Instance } from './deployment.js';

const AGENTS = 3;
const FILES_PER_CARD = 60;

let dir: string;
let pg: PgCluster;
let rgw: Rgw;
let database: string;
const instances: Instance[] = [];
let lb: Haproxy;

beforeAll(async () => {
  dir = tempDir('dms-peer-multi-');
  [pg, rgw] = await Promise.all([startPostgres(), startRgw()]);
  database = await pg.createDatabase('multi');
  const ports = await freePorts(2);
  // One after the other only for a readable log: the startup lock would serialise them anyway.
  for (const [i, port] of ports.entries()) {
    instances.push(
      await startInstance({
        name: `i${i + 1}`,
        dir,
        port,
        database: pg.config(database),
        bucket: rgwBucketConfig(rgw),
      }),
    );
  }
  lb = await startHaproxy(dir, ports);
}, 180_000);

afterAll(async () => {
  await lb?.stop();
  for (const i of instances) await stopInstance(i);
  await Promise.all([pg?.stop(), rgw?.stop()]);
  fs.rmSync(dir, { recursive: true, force: true });
});

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

async function waitFor(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

it('SIGKILL of one instance and a PostgreSQL restart mid-run: every file recorded exactly once', async () => {
  const [first] = instances;
  const crew = { ws: first!.workspaceId, token: first!.token };
  // The second instance printed its own dev token (its own data dir) and did not revoke the first's.
  expect(instances[1]!.workspaceId).toBe(crew.ws);
  const via = { baseUrl: lb.url };
  const cards = Array.from({ length: AGENTS }, (_, i) => card(`card${i + 1}`, FILES_PER_CARD));
  const states = cards.map((_, i) => {
    const s = path.join(dir, `state${i + 1}`);
    fs.mkdirSync(s);
    return s;
  });
  const t0 = Date.now();
  const runs = cards.map((c, i) => runSync(via, crew, states[i]!, c));

  await waitFor('a first share of callbacks', async () => (await callbackCount()) >= 30);
  instances[1]!.child.kill('SIGKILL');
  const killedAt = await callbackCount();

  await waitFor(
    'more callbacks through the surviving instance',
    async () => (await callbackCount()) >= killedAt + 30,
  );
  await pg.stopServer();
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
  // The service recovers by itself: no restart of the instance.
  await waitFor(
    'the instance ready again',
    async () => (await fetch(`${first!.baseUrl}/readyz`)).status === 200,
    30_000,
  );

  // Every agent finishes (a crew runs sync again when it reports files still pending).
  const summaries: Summary[] = [];
  for (const [i, run] of runs.entries()) {
    let { code, out, err } = await run.done;
    for (let again = 0; code !== 0 && again < 3; again++) {
      ({ code, out, err } = await runSync(via, crew, states[i]!, cards[i]!).done);
    }
    expect(code, `${out}\n${err}`).toBe(0);
    summaries.push(JSON.parse(out.trim().split('\n').at(-1)!) as Summary);
  }
  const seconds = (Date.now() - t0) / 1000;

  // Counted in the database: one callback record per file, none twice, none missing.
  const rows = await pg.query<{ name: string; path: string; n: string }>(
    `SELECT name, path, count(*) AS n FROM media WHERE workspace_id = $1 AND source = 'callback' GROUP BY name, path`,
    [crew.ws],
    database,
  );
  const twice = rows.filter((r) => Number(r.n) !== 1);
  console.log(
    `multi-instance: ${AGENTS} agents, ${AGENTS * FILES_PER_CARD} files in ${seconds.toFixed(1)} s; ` +
      `SIGKILL after ${killedAt} callbacks; PostgreSQL restarted; records ${rows.length}, twice ${twice.length}`,
  );
  expect(twice).toEqual([]);
  expect(rows).toHaveLength(AGENTS * FILES_PER_CARD);
  expect(await callbackCount()).toBe(AGENTS * FILES_PER_CARD);
  // Nothing recorded as failed either.
  expect((await pg.query('SELECT 1 FROM media WHERE result <> 0', [], database)).length).toBe(0);
});
