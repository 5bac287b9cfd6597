import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  formatReport,
  openSession,
  paths,
  WAYLINE_QUERIES,
  type LoadReport,
  type LoadSession,
  type Loose,
  type RunResult,
  type ScenarioName,
  type WaylineQuery,
  waylinePageProblem,
} from './core.mjs';

// The load test of issue 7, short: the reference service (built CLI, separate
// process) under 50 connections for 3 s per endpoint. Correctness only: no
// timing or throughput is asserted (project rule: no timed tests); the figures
// are printed. The full run is `node test/load/load.mjs` (README.md).
const CONNECTIONS = 50;
const DURATION_S = 3;

let session: LoadSession;
let report: LoadReport;
const run = (name: ScenarioName): RunResult => {
  const r = report.runs.find((x) => x.name === name);
  if (!r) throw new Error(`no ${name} run in the report`);
  return r;
};

beforeAll(async () => {
  session = await openSession({ waylines: 300, known: 10 });
  report = await session.run({ duration: DURATION_S, connections: CONNECTIONS, warmup: 0 });
  console.log(`load test, ${DURATION_S} s per endpoint:\n${formatReport(report)}`);
}, 90_000);

afterAll(async () => {
  await session?.close();
});

describe('reference service under load (50 connections)', () => {
  it('ran every endpoint at 50 connections, with no errors, timeouts or 5xx', () => {
    expect(report.runs.map((r) => r.name)).toEqual(['waylines', 'fast-upload', 'bad-token']);
    for (const r of report.runs) {
      expect(r.connections, r.name).toBe(CONNECTIONS);
      expect(r.answered, r.name).toBeGreaterThan(0);
      expect(r.requests, r.name).toBe(r.answered);
      expect({ name: r.name, errors: r.errors, timeouts: r.timeouts, status5xx: r.status5xx }).toEqual({
        name: r.name,
        errors: 0,
        timeouts: 0,
        status5xx: 0,
      });
      expect(r.envelope.checked, r.name).toBe(r.answered);
      expect(r.envelope.examples, r.name).toEqual([]);
      expect(r.envelope.wrong, r.name).toBe(0);
    }
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('waylines: every answer is HTTP 200 with code 0 and the page the query asked for', () => {
    const r = run('waylines');
    expect(r.statusCodes).toEqual({ '200': r.answered });
    expect(r.non2xx).toBe(0);
    // Every query variant was answered and one of each was checked in full.
    expect(Object.keys(r.samples).sort()).toEqual(WAYLINE_QUERIES.map((_, i) => String(i)).sort());
    expect(r.envelope.fullyChecked).toBeGreaterThanOrEqual(WAYLINE_QUERIES.length);
  });

  it('fast-upload: every answer is HTTP 200; known fingerprints code 0, unknown ones "upload it"', () => {
    const r = run('fast-upload');
    expect(r.statusCodes).toEqual({ '200': r.answered });
    expect(r.envelope.hits).toBeGreaterThan(0);
    expect(r.envelope.misses).toBeGreaterThan(0);
    expect((r.envelope.hits ?? 0) + (r.envelope.misses ?? 0)).toBe(r.answered);
  });

  it('bad token: every answer is HTTP 401 with the envelope, on both endpoints', () => {
    const r = run('bad-token');
    expect(r.statusCodes).toEqual({ '401': r.answered });
    for (const what of ['waylines', 'fast-upload']) {
      expect(r.samples[what], what).toMatchObject({
        status: 401,
        body: { code: session.codes.TOKEN_INVALID, message: expect.any(String) },
      });
    }
  });

  it('sampled wayline pages answered under load are right: same as at rest, filtered, ordered', async () => {
    const r = run('waylines');
    const svc = session.service;
    for (const [i, query] of WAYLINE_QUERIES.entries()) {
      const sample: Loose = r.samples[String(i)];
      expect(sample.qs).toBeTypeOf('string');
      const quiet = await call(svc, 'GET', `${paths(svc.workspaceId).waylines}?${sample.qs}`);
      expect(quiet.status).toBe(200);
      expect(sample.body, JSON.stringify(query)).toEqual(quiet.body);
      checkPage(query, sample.body.data);
    }
    // Realistic pages: the plain first page is full, the page past the end is empty.
    const first: Loose = r.samples['0'];
    expect(first.body.data.list).toHaveLength(10);
    const past: Loose = r.samples[String(WAYLINE_QUERIES.findIndex((q) => (q.page ?? 1) > 100))];
    expect(past.body.data.list).toEqual([]);
    expect(past.body.data.pagination.total).toBeGreaterThan(300);
  });

  it('sampled fast-upload answers are right, and still so after the load', async () => {
    const r = run('fast-upload');
    const { known, unknown } = session.seeds;
    const fp = (x: Loose): string => String(x.request.fingerprint).toLowerCase();
    expect(r.samples.known.body).toEqual({ code: 0, message: 'success', data: {} });
    expect(known.map((m) => m.fingerprint)).toContain(fp(r.samples.known));
    expect(r.samples.unknown.body).toMatchObject({ code: session.codes.FINGERPRINT_UNKNOWN });
    expect(unknown.map((m) => m.fingerprint)).toContain(fp(r.samples.unknown));

    const svc = session.service;
    const url = paths(svc.workspaceId).fastUpload;
    const hit = await call(svc, 'POST', url, {
      body: { fingerprint: known[0]!.fingerprint.toUpperCase(), name: known[0]!.name },
    });
    expect(hit).toEqual({ status: 200, body: { code: 0, message: 'success', data: {} } });
    const miss = await call(svc, 'POST', url, {
      body: { fingerprint: unknown[0]!.fingerprint, name: unknown[0]!.name },
    });
    expect(miss.status).toBe(200);
    expect(miss.body.code).toBe(session.codes.FINGERPRINT_UNKNOWN);
  });

  it('the service process is still running and answering afterwards, with no error in its log', async () => {
    expect(report.service).toMatchObject({ alive: true, answering: true, logErrors: { count: 0 } });
    expect(session.service.alive()).toBe(true);
    const svc = session.service;
    const r = await call(svc, 'GET', `${paths(svc.workspaceId).waylines}?order_by=name%20asc&page_size=5`);
    expect(r.status).toBe(200);
    expect(r.body.code).toBe(0);
    expect(r.body.data.list).toHaveLength(5);
  });
});

describe('the answer checks of the load test', () => {
  it('count an HTTP 200 answer with a non-zero code, or a wrong page, as wrong', () => {
    const q = { page: 2, page_size: 10 };
    const page = (total: number, n: number) => ({
      code: 0,
      message: 'success',
      data: {
        list: Array.from({ length: n }, (_, i) => ({ id: String(i) })),
        pagination: { page: 2, page_size: 10, total },
      },
    });
    expect(waylinePageProblem(q, page(25, 10))).toBeNull();
    expect(waylinePageProblem(q, page(15, 5))).toBeNull();
    expect(waylinePageProblem(q, { code: -1, message: 'order_by is required' })).toMatch(/code -1/);
    expect(waylinePageProblem(q, { code: '0', message: 'success', data: page(25, 10).data })).toMatch(
      /code "0"/,
    );
    expect(waylinePageProblem(q, page(25, 9))).toMatch(/9 items, expected 10/);
    expect(waylinePageProblem({ page: 3 }, page(25, 5))).toMatch(/pagination/);
    expect(waylinePageProblem(q, undefined)).toBe('not JSON');
  });
});

/** Every item matches the query's filters, and the page is in the asked order. */
function checkPage(q: WaylineQuery, data: Loose): void {
  const list: Loose[] = data.list;
  for (const w of list) {
    if (q.favorited !== undefined) expect(w.favorited).toBe(q.favorited);
    if (q.action_type !== undefined) expect(w.action_type).toBe(q.action_type);
    if (q.template_type)
      expect(w.template_types.some((t: number) => q.template_type!.includes(t))).toBe(true);
    if (q.drone_model_keys) expect(q.drone_model_keys).toContain(w.drone_model_key);
    if (q.payload_model_key) {
      expect(w.payload_model_keys.some((k: string) => q.payload_model_key!.includes(k))).toBe(true);
    }
  }
  const [column = 'update_time', dir = 'desc'] = (q.order_by ?? 'update_time desc').split(' ');
  const values = list.map((w) => w[column]);
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  expect(values).toEqual(dir === 'asc' ? sorted : sorted.reverse());
}
