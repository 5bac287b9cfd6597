/**
 * Issue 7: lost answers and malformed answers, over real HTTP through the
 * fault proxies in front of the reference service and its bucket.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_KINDS, type ErrorKind } from '../../main/core/errors.js';
import { Queue } from '../../main/core/queue/queue.js';
import type { Fault, FaultProxy } from './proxy.js';
import {
  expectPlain,
  expectPromiseKept,
  findSecrets,
  forwardedCallbacks,
  KiB,
  makeCard,
  MiB,
  startEngine,
  startRig,
  syncUntilDone,
  until,
  type Rig,
} from './rig.js';

let rig: Rig;
const stateDirs: string[] = [];
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-answers-' });
});
afterAll(async () => {
  await rig?.close();
});

const FOLDER = 'DJI_202301011200_001_Answers';

describe('callback stored, answer lost', () => {
  it('several lost answers (dropped, cut mid-answer, answered too late): one record and one callback per file', async () => {
    const w = await rig.workspace('lost-answers');
    const root = path.join(rig.dir, 'card-lost');
    const files = makeCard(
      root,
      FOLDER,
      Array.from({ length: 6 }, (_, i) => ({
        name: `DJI_20230101120000_000${i + 1}_W.JPG`,
        size: 64 * KiB + i * 1000,
      })),
    );
    const isCallback = (r: { op: string }) => r.op === 'upload-callback';
    const since = rig.service.records.length;
    // The server stores each of these callbacks; the agent never hears back.
    const dropped = rig.service.inject({
      name: 'drop',
      match: isCallback,
      fault: { kind: 'drop-answer' },
      times: 2,
    });
    const cut = rig.service.inject({
      name: 'cut',
      match: isCallback,
      fault: { kind: 'reset', at: 'mid-response' },
      times: 2,
    });
    const late = rig.service.inject({
      name: 'late',
      match: isCallback,
      fault: { kind: 'late-answer', ms: 1_500 },
      times: 2,
    });
    // And the first check after a lost answer is lost too.
    let checks = 0;
    const lostCheck = rig.service.inject({
      name: 'lost-check',
      match: (r) => r.op === 'fast-upload' && ++checks > files.length,
      fault: { kind: 'drop-answer' },
      times: 1,
    });
    const queueFile = path.join(rig.dir, 'state-lost', 'queue.db');
    stateDirs.push(path.dirname(queueFile));
    const queue = new Queue(queueFile);
    try {
      await syncUntilDone({
        queue,
        api: w.api({ timeoutMs: 700 }),
        roots: [root],
        files: files.length,
        config: { concurrency: { files: 2, parts: 2 } },
      });
    } finally {
      queue.close();
    }
    expect([dropped.applied, cut.applied, late.applied, lostCheck.applied]).toEqual([2, 2, 2, 1]);
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
    // Every file whose answer was lost asked fast-upload before anything else.
    const mine = rig.service.records.filter((r) => r.id > since);
    expect(mine.filter((r) => r.op === 'fast-upload').length).toBeGreaterThanOrEqual(files.length + 6);
    expect(forwardedCallbacks(rig.service, since).size).toBe(files.length);
  });
  it('answer lost, then the check before re-posting gets an error envelope (HTTP 200, code 500000): the callback is not posted twice', async () => {
    const w = await rig.workspace('lost-then-error-check');
    const root = path.join(rig.dir, 'card-lost-check');
    const files = makeCard(root, FOLDER, [{ name: 'DJI_20230101120000_0001_W.JPG', size: 80 * KiB }]);
    let lost = false;
    const drop = rig.service.inject({
      name: 'drop-callback-answer',
      match: (r) => r.op === 'upload-callback' && r.path.includes(w.ws),
      fault: { kind: 'drop-answer' },
      hooks: { beforeRelay: () => void (lost = true) },
      times: 1,
    });
    // The check-first fast-upload meets a server error in an envelope (some servers answer errors with HTTP 200).
    const check = rig.service.inject({
      name: 'error-envelope-on-check',
      match: (r) => lost && r.op === 'fast-upload' && r.path.includes(w.ws),
      fault: {
        kind: 'respond',
        status: 200,
        body: JSON.stringify({ code: 500000, message: 'internal error, try again' }),
      },
      times: 1,
    });
    const queueFile = path.join(rig.dir, 'state-lost-check', 'queue.db');
    stateDirs.push(path.dirname(queueFile));
    const queue = new Queue(queueFile);
    try {
      await syncUntilDone({ queue, api: w.api(), roots: [root], files: 1 });
    } finally {
      queue.close();
    }
    expect([drop.applied, check.applied]).toEqual([1, 1]);
    // One record either way (this service ignores a repeated callback); servers in the wild store two.
    await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  });
});

const HTML =
  '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>';
const html = (status: number): Fault => ({
  kind: 'respond',
  status,
  body: HTML,
  headers: { 'content-type': 'text/html' },
});
const envelope = (fn: (env: Record<string, unknown>) => Record<string, unknown>): Fault => ({
  kind: 'rewrite',
  fn: (body) => ({ body: JSON.stringify(fn(JSON.parse(body) as Record<string, unknown>)) }),
});
const truncated: Fault = {
  kind: 'rewrite',
  fn: (body) => ({ body: body.slice(0, Math.floor(body.length / 2)) }),
};
const withoutKey = (key: string): Fault =>
  envelope((env) => {
    const data = { ...(env['data'] as Record<string, unknown>) };
    delete data[key];
    return { ...env, data };
  });

interface Variant {
  name: string;
  proxy: 'service' | 'bucket';
  op: string;
  fault: Fault;
  /** The error the file shows, or null: tolerated, no error at all. */
  expect: { kind: ErrorKind; outcome: 'retry-later' | 'failed'; says?: RegExp } | null;
  big?: boolean;
}

const VARIANTS: Variant[] = [
  {
    name: 'sts: HTML page with 200',
    proxy: 'service',
    op: 'sts',
    fault: html(200),
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'sts: HTML page with 502',
    proxy: 'service',
    op: 'sts',
    fault: html(502),
    expect: { kind: 'server', outcome: 'retry-later' },
  },
  {
    name: 'sts: truncated JSON',
    proxy: 'service',
    op: 'sts',
    fault: truncated,
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'sts: code "0" as a string',
    proxy: 'service',
    op: 'sts',
    fault: envelope((e) => ({ ...e, code: '0' })),
    expect: null,
  },
  {
    name: 'sts: code as a word',
    proxy: 'service',
    op: 'sts',
    fault: envelope((e) => ({ ...e, code: 'SUCCESS_NOT', message: 'storage quota exceeded' })),
    expect: { kind: 'rejected', outcome: 'failed', says: /storage quota exceeded/ },
  },
  {
    name: 'sts: data missing',
    proxy: 'service',
    op: 'sts',
    fault: envelope((e) => ({ code: e['code'], message: e['message'] })),
    expect: { kind: 'server', outcome: 'retry-later' },
  },
  {
    name: 'sts: no credentials',
    proxy: 'service',
    op: 'sts',
    fault: withoutKey('credentials'),
    expect: { kind: 'server', outcome: 'retry-later' },
  },
  {
    name: 'sts: no endpoint',
    proxy: 'service',
    op: 'sts',
    fault: withoutKey('endpoint'),
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'sts: 200 with an unknown code',
    proxy: 'service',
    op: 'sts',
    fault: {
      kind: 'respond',
      status: 200,
      body: JSON.stringify({ code: 123456, message: 'storage is being migrated' }),
    },
    expect: { kind: 'rejected', outcome: 'failed', says: /storage is being migrated/ },
  },
  {
    name: 'fast-upload: HTML page with 200',
    proxy: 'service',
    op: 'fast-upload',
    fault: html(200),
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'fast-upload: truncated JSON',
    proxy: 'service',
    op: 'fast-upload',
    fault: truncated,
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'fast-upload: code as a string',
    proxy: 'service',
    op: 'fast-upload',
    fault: envelope((e) => ({ ...e, code: String(e['code']) })),
    expect: null,
  },
  {
    name: 'fast-upload: 200 with an unknown code',
    proxy: 'service',
    op: 'fast-upload',
    fault: { kind: 'respond', status: 200, body: JSON.stringify({ code: 777, message: 'index warming up' }) },
    expect: null,
  },
  {
    name: 'callback: HTML page instead of the answer',
    proxy: 'service',
    op: 'upload-callback',
    fault: { kind: 'rewrite', fn: () => ({ body: HTML, headers: { 'content-type': 'text/html' } }) },
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'callback: truncated JSON',
    proxy: 'service',
    op: 'upload-callback',
    fault: truncated,
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
  },
  {
    name: 'callback: code "0" as a string',
    proxy: 'service',
    op: 'upload-callback',
    fault: envelope((e) => ({ ...e, code: '0' })),
    expect: null,
  },
  {
    name: 'callback: data missing',
    proxy: 'service',
    op: 'upload-callback',
    fault: envelope((e) => ({ code: e['code'], message: e['message'] })),
    expect: null,
  },
  {
    name: 'callback: 200 with an unknown code',
    proxy: 'service',
    op: 'upload-callback',
    fault: {
      kind: 'respond',
      status: 200,
      body: JSON.stringify({ code: 123456, message: 'name contains a reserved word' }),
    },
    expect: { kind: 'rejected', outcome: 'failed', says: /name contains a reserved word/ },
  },
  {
    name: 'callback: HTML 502',
    proxy: 'service',
    op: 'upload-callback',
    fault: html(502),
    expect: { kind: 'server', outcome: 'retry-later' },
  },
  {
    name: 'bucket PutObject: HTML 502',
    proxy: 'bucket',
    op: 'PutObject',
    fault: html(502),
    expect: { kind: 'server', outcome: 'retry-later' },
  },
  {
    name: 'bucket CreateMultipartUpload: HTML with 200',
    proxy: 'bucket',
    op: 'CreateMultipartUpload',
    fault: { kind: 'rewrite', fn: () => ({ body: HTML, headers: { 'content-type': 'text/html' } }) },
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
    big: true,
  },
  {
    name: 'bucket UploadPart: 200 without ETag',
    proxy: 'bucket',
    op: 'UploadPart',
    fault: { kind: 'rewrite', fn: (body) => ({ body, headers: { etag: null } }) },
    expect: { kind: 'malformed-response', outcome: 'retry-later' },
    big: true,
  },
];

describe('malformed answers: a clear error per file, no crash, then done', () => {
  it.each(VARIANTS)('$name', async (v) => {
    const w = await rig.workspace(v.name);
    const slug = v.name.replace(/[^a-z0-9]+/gi, '-');
    const root = path.join(rig.dir, `card-${slug}`);
    const files = makeCard(root, FOLDER, [
      v.big
        ? { name: 'DJI_20230101120000_0001_W.MP4', size: 17 * MiB }
        : { name: 'DJI_20230101120000_0001_W.JPG', size: 200 * KiB },
    ]);
    const queueFile = path.join(rig.dir, `state-${slug}`, 'queue.db');
    stateDirs.push(path.dirname(queueFile));
    const proxy: FaultProxy = v.proxy === 'service' ? rig.service : rig.bucket;
    const since = rig.service.records.length;
    const rule = proxy.inject({ name: slug, match: (r) => r.op === v.op, fault: v.fault, times: 1 });
    const queue = new Queue(queueFile);
    const run = await startEngine({ queue, api: w.api(), roots: [root], config: { partSizeMiB: 5 } });
    try {
      await until(
        'the file to be done or failed',
        () => queue.counts().done.files + queue.counts().failed.files === 1,
        20_000,
      );
      if (queue.counts().failed.files === 1) {
        // Needs the user: the reason is kept until Retry.
        const row = queue.list({ states: ['failed'] })[0]!;
        expect(row.errorKind).toBe(v.expect?.kind);
        expect(queue.retry({ all: true })).toHaveLength(1);
        run.engine.wake();
        await until('done after Retry', () => queue.counts().done.files === 1, 20_000);
      }
    } finally {
      await run.stop();
      queue.close();
    }
    expect(rule.applied, 'the fault was injected').toBe(1);
    const errors = run.events.filter((e) => e.error);
    if (v.expect === null) {
      expect(errors.map((e) => e.error)).toEqual([]);
    } else {
      expect(errors).toHaveLength(1);
      const e = errors[0]!;
      expect(e.outcome).toBe(v.expect.outcome);
      expect(ERROR_KINDS).toContain(e.error!.kind);
      expect(e.error!.kind, e.error!.message).toBe(v.expect.kind);
      expectPlain(e.error!.plain);
      expect(e.error!.message).not.toMatch(/\n\s+at |\[object Object\]|undefined/);
      if (v.expect.says) expect(e.error!.plain).toMatch(v.expect.says);
    }
    await expectPromiseKept({ rig, w, files, queueFile });
    if (v.op === 'upload-callback') {
      // Stored once: a callback whose answer was garbled after the server took it is never posted again.
      expect([...forwardedCallbacks(rig.service, since).values()]).toEqual([1]);
    }
  });
});

it('no token or STS secret in anything the agent wrote', () => {
  expect(stateDirs.length).toBeGreaterThan(0);
  expect(rig.secrets.size).toBeGreaterThan(3);
  expect(
    findSecrets(
      stateDirs.filter((d) => fs.existsSync(d)),
      rig.secrets,
    ),
  ).toEqual([]);
});
