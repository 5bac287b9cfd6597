/**
 * What a client sees of an instance dying under load, through the recipe's
 * HAProxy (docs/deploy.md): PostgreSQL 15, two `serve` instances (the real
 * CLI) with Ceph RGW as their bucket. 200 clients, each on its own keep-alive
 * connection sending fast-upload requests one after the other, more at once
 * than the two instances take (48 each): the rest wait in HAProxy's queue.
 * Mid-run one instance is killed with SIGKILL. Every request must still get
 * the contract's answer from the other instance: none cut without an answer,
 * none refused. With the recipe's earlier `option redispatch` (a retry on
 * another instance only at the last try) and no `observe layer4`, the
 * requests in flight on or queued for the killed instance were retried on it
 * until HAProxy gave up: 48 cut and 458 answered 503 in this test (and 48
 * cut in issue 24's load run).
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import { startDeployment, type Deployment } from './deployment.js';

/** Clients at once, each with one keep-alive connection (more than the two instances take at once: 48 each). */
const CLIENTS = 200;
const ROUNDS = 10;
/** The kill lands after this many answers, with every client busy. */
const KILL_AFTER = 700;

let d: Deployment;
beforeAll(async () => {
  d = await startDeployment('failover');
}, 180_000);
afterAll(() => d?.stop());

it('SIGKILL of one instance under load: every request queued for it or in flight on it is answered by the other', async () => {
  const { instances, lb } = d;
  const { token, workspaceId } = instances[0]!;
  const answers: Record<string, number> = {};
  let sent = 0;
  let killed = false;
  /** One client: its own keep-alive connection, one request after the other, as an agent sends them. */
  const client = async (i: number): Promise<void> => {
    const connection = new Agent({ connections: 1, keepAliveTimeout: 10_000 });
    try {
      for (let n = 0; n < ROUNDS; n++) {
        let said: string;
        try {
          const res = await request(`${lb.url}/media/api/v1/workspaces/${workspaceId}/fast-upload`, {
            method: 'POST',
            dispatcher: connection,
            headers: { 'x-auth-token': token, 'content-type': 'application/json' },
            body: JSON.stringify({ fingerprint: randomBytes(16).toString('hex'), name: `DJI_${i}_${n}.JPG` }),
          });
          const text = await res.body.text();
          const code = (JSON.parse(text) as { code: number }).code;
          said = code === CODES.FINGERPRINT_UNKNOWN ? 'answered' : `HTTP ${res.statusCode} code ${code}`;
        } catch (err) {
          said = `no answer (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
        }
        answers[said] = (answers[said] ?? 0) + 1;
        // The kill lands in the middle of the run, with every client busy.
        if (++sent === KILL_AFTER) {
          killed = true;
          instances[1]!.child.kill('SIGKILL');
        }
      }
    } finally {
      await connection.close();
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
  expect(killed).toBe(true);
  // Proof that the kill hit requests that were the killed instance's: HAProxy sent them to the other.
  const log = lb.log().split('\n');
  const redispatched = log.filter((l) => /dms\/dms1 .* 200 .*\/\+\d /.test(l)).length;
  const said = `answers: ${JSON.stringify(answers)}; redispatched to the other instance: ${redispatched}\n${log
    .filter((l) => /DOWN|dms2/.test(l) && !/ 200 /.test(l))
    .slice(0, 20)
    .join('\n')}`;
  expect(answers, said).toEqual({ answered: CLIENTS * ROUNDS });
  expect(redispatched, said).toBeGreaterThan(0);
});
