/**
 * The fault rig: the reference service and its embedded bucket, each behind a
 * fault proxy (the service proxy rewrites the STS answer's endpoint to the
 * bucket proxy, so every bucket request of the agent goes through it too),
 * plus helpers to build cards, run the engine, and check the promise: every
 * file done, objects byte-identical, exactly one record per file with the
 * fingerprint of the final content.
 */
import { syncLanes } from '../../main/core/sync/peers.js';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { ApiClient, type ApiClientOptions } from '../../main/core/api/client.js';
import { parseConfig, type ConfigInput } from '../../main/core/config.js';
import type { BackoffPolicy, Queue } from '../../main/core/queue/queue.js';
import type { SyncEngine, FileEvent } from '../../main/core/sync/engine.js';
import type { RunStateName } from '../../main/shared/states.js';
import { folderSource } from '../../main/core/sources/source.js';
import { flightFolderOf } from '../../main/core/media/flight-folder.js';
import { startService, type MediaRecord, type RunningService } from '../../main/service/index.js';
import { getObject, tempDir } from '../support/harness.js';
import { startProxy, type FaultProxy, type ProxyRecord } from './proxy.js';

export const MiB = 1024 * 1024;
export const KiB = 1024;

export interface Workspace {
  ws: string;
  token: string;
  /** Through the service proxy (and so the bucket proxy). */
  api(opts?: Partial<ApiClientOptions>): ApiClient;
  /** Straight to the service: for checks, never faulted. */
  direct(): ApiClient;
}

export interface Rig {
  dir: string;
  svc: RunningService;
  service: FaultProxy;
  bucket: FaultProxy;
  /** Every token and STS secret handed out: none may end up in the agent's files. */
  secrets: Set<string>;
  workspace(name: string): Promise<Workspace>;
  close(): Promise<void>;
}

export async function startRig(opts: { stsExpireSeconds?: number; prefix?: string } = {}): Promise<Rig> {
  const dir = tempDir(opts.prefix ?? 'dms-faults-');
  const svc = await startService({
    dataDir: path.join(dir, 'svc'),
    logger: false,
    ...(opts.stsExpireSeconds ? { stsExpireSeconds: opts.stsExpireSeconds } : {}),
  });
  const secrets = new Set<string>([svc.token]);
  const bucket = await startProxy({ kind: 'bucket', target: svc.bucket.endpoint });
  const service = await startProxy({
    kind: 'service',
    target: svc.baseUrl,
    transform(r, body, status) {
      if (r.op !== 'sts' || status !== 200) return body;
      try {
        const env = JSON.parse(body) as {
          data?: { endpoint?: string; credentials?: Record<string, unknown> };
        };
        const c = env.data?.credentials;
        for (const k of ['access_key_secret', 'security_token'])
          if (typeof c?.[k] === 'string') secrets.add(c[k]);
        if (env.data?.endpoint) env.data.endpoint = bucket.url;
        return JSON.stringify(env);
      } catch {
        return body;
      }
    },
  });
  return {
    dir,
    svc,
    service,
    bucket,
    secrets,
    async workspace(name) {
      const ws = await svc.admin.createWorkspace(name);
      const token = await svc.admin.createToken({ workspaceId: ws });
      // The checks have a token of their own: the agent's may get revoked.
      const checker = await svc.admin.createToken({ workspaceId: ws });
      secrets.add(token);
      secrets.add(checker);
      return {
        ws,
        token,
        api: (o = {}) => new ApiClient({ baseUrl: service.url, workspaceId: ws, token, ...o }),
        direct: () => new ApiClient({ baseUrl: svc.baseUrl, workspaceId: ws, token: checker }),
      };
    },
    async close() {
      await service.close();
      await bucket.close();
      await svc.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface CardFile {
  rel: string;
  abs: string;
  size: number;
}

/**
 * A card laid out as Pilot 2 writes it, with random content (unique per
 * file), written long ago (no quiet period applies).
 */
export function makeCard(
  root: string,
  folder: string,
  files: Array<{ name: string; size: number }>,
): CardFile[] {
  const dir = path.join(root, 'DCIM', folder);
  fs.mkdirSync(dir, { recursive: true });
  const old = Date.now() / 1000 - 3600;
  return files.map((f) => {
    const abs = path.join(dir, f.name);
    fs.writeFileSync(abs, randomBytes(f.size));
    fs.utimesSync(abs, old, old);
    return { rel: `DCIM/${folder}/${f.name}`, abs, size: f.size };
  });
}

export function md5(buf: Buffer): string {
  return createHash('md5').update(buf).digest('hex');
}

export function until(what: string, check: () => boolean, ms = 20_000, stepMs = 20): Promise<void> {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      let ok: boolean;
      try {
        ok = check();
      } catch {
        ok = false;
      }
      if (ok) return resolve();
      if (Date.now() > end) return reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      setTimeout(tick, stepMs);
    };
    tick();
  });
}

export const FAST_BACKOFF: BackoffPolicy = { baseMs: 100, capMs: 1_000 };
/**
 * The wait before checking a callback whose answer was lost, shortened like
 * the backoff (the product's default is 60 s; test/sync/sync.test.ts holds it).
 */
export const FAST_SETTLE: ConfigInput = { callbackSettleSeconds: 1 };

export interface EngineRun {
  engine: SyncEngine;
  events: FileEvent[];
  states: Array<{ state: RunStateName; at: number; message?: string; kind?: string }>;
  /** Resolves when the run loop ended. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/** Starts the real engine (mode forever, like watch and the tray app) on the folders. */
export async function startEngine(opts: {
  queue: Queue;
  api: ApiClient;
  roots: string[];
  config?: ConfigInput;
  backoff?: BackoffPolicy;
}): Promise<EngineRun> {
  const engine = syncLanes({
    queue: opts.queue,
    api: opts.api,
    config: parseConfig({ ...FAST_SETTLE, ...opts.config }),
    backoff: opts.backoff ?? FAST_BACKOFF,
  }).engine;
  const events: FileEvent[] = [];
  const states: EngineRun['states'] = [];
  engine.on('file', (e) => events.push(e));
  engine.on('state', ({ to }) => {
    const err = 'error' in to ? to.error : null;
    states.push({ state: to.name, at: Date.now(), ...(err ? { message: err.message, kind: err.kind } : {}) });
  });
  const controller = new AbortController();
  for (const r of opts.roots) await engine.scan(folderSource(r));
  const done = engine.run({ mode: 'forever', signal: controller.signal });
  return {
    engine,
    events,
    states,
    done,
    async stop() {
      controller.abort();
      await done;
      engine.close();
    },
  };
}

/** Runs the engine until every row of the queue is done (or the time is up). */
export async function syncUntilDone(
  opts: Parameters<typeof startEngine>[0] & { files: number; timeoutMs?: number },
): Promise<EngineRun & { ms: number }> {
  const t0 = Date.now();
  const run = await startEngine(opts);
  try {
    await until(
      `${opts.files} files done`,
      () => opts.queue.counts().done.files >= opts.files,
      opts.timeoutMs ?? 30_000,
      50,
    );
  } finally {
    await run.stop();
  }
  return { ...run, ms: Date.now() - t0 };
}

/** Every row of a queue file, read-only (works while another process holds it). */
export function queueRows(queueFile: string): Array<{
  rel_path: string;
  state: string;
  fingerprint: string | null;
  object_key: string | null;
  bytes_sent: number;
  error_kind: string | null;
  error_message: string | null;
}> {
  if (!fs.existsSync(queueFile)) return [];
  const db = new Database(queueFile, { readonly: true, fileMustExist: true, timeout: 2000 });
  try {
    return db
      .prepare(
        'SELECT rel_path, state, fingerprint, object_key, bytes_sent, error_kind, error_message FROM files ORDER BY id',
      )
      .all() as ReturnType<typeof queueRows>;
  } catch {
    return [];
  } finally {
    db.close();
  }
}

/** Upload-callback requests that reached the server and were answered by it, per `<workspace>|<path>/<name>`. */
export function forwardedCallbacks(service: FaultProxy, since = 0): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of service.records) {
    if (
      r.id <= since ||
      r.op !== 'upload-callback' ||
      !r.upstreamCompleted ||
      r.upstreamStatus !== 200 ||
      !r.requestBody
    )
      continue;
    let name: string;
    try {
      const body = JSON.parse(r.requestBody) as { name?: string; path?: string };
      const ws = r.path.split('/')[5] ?? '';
      name = `${ws}|${body.path ?? ''}/${body.name ?? ''}`;
    } catch {
      continue;
    }
    out.set(name, (out.get(name) ?? 0) + 1);
  }
  return out;
}

/**
 * Bytes the bucket accepted (HTTP 200) more than once for the same
 * (object key, part): the measure of "re-sent" work. PutObject counts as
 * part 0. Each duplicate is listed with the record of the repeat.
 */
export function duplicateBodies(
  bucket: FaultProxy,
  since = 0,
): { bytes: number; repeats: ProxyRecord[]; accepted: number } {
  const seen = new Set<string>();
  const repeats: ProxyRecord[] = [];
  let bytes = 0;
  let accepted = 0;
  for (const r of bucket.records) {
    if (r.id <= since) continue;
    if ((r.op !== 'UploadPart' && r.op !== 'PutObject') || r.upstreamStatus !== 200 || !r.upstreamCompleted)
      continue;
    accepted += r.requestBytes;
    const id = `${r.key}#${r.partNumber ?? 0}`;
    if (seen.has(id)) {
      repeats.push(r);
      bytes += r.requestBytes;
    } else seen.add(id);
  }
  return { bytes, repeats, accepted };
}

/**
 * The promise of issue 7, for one workspace: every queue row done, one
 * record per file (a callback record) whose fingerprint is the MD5 of the
 * file as it is now, the object byte-identical, no stray record, and (when
 * asked) exactly one callback per file reached the server. All violations
 * are listed at once.
 */
export async function promiseViolations(opts: {
  rig: Rig;
  w: Workspace;
  files: CardFile[];
  queueFile: string;
  oneCallbackEach?: boolean;
}): Promise<{ violations: string[]; records: MediaRecord[] }> {
  const { rig, w, files } = opts;
  const v: string[] = [];
  for (const r of queueRows(opts.queueFile))
    if (r.state !== 'done') v.push(`queue: ${r.rel_path} is ${r.state} (${r.error_message ?? ''})`);
  const records = await rig.svc.admin.mediaRecords(w.ws);
  if (records.length !== files.length) v.push(`server: ${records.length} records for ${files.length} files`);
  const sts = await w.direct().getSts();
  const cbs = forwardedCallbacks(rig.service);
  for (const f of files) {
    const content = fs.readFileSync(f.abs);
    const flight = flightFolderOf(f.rel).path;
    const mine = records.filter((r) => r.name === path.basename(f.abs) && (r.path ?? '') === flight);
    if (mine.length !== 1 || mine[0]!.source !== 'callback') {
      v.push(`${f.rel}: records ${JSON.stringify(mine.map((r) => r.source))}, expected one callback record`);
      continue;
    }
    const rec = mine[0]!;
    if (rec.fingerprint !== md5(content))
      v.push(
        `${f.rel}: recorded fingerprint ${rec.fingerprint} is not the MD5 of the final content (${md5(content)})`,
      );
    try {
      const body = await getObject(sts, rec.object_key);
      if (!body.equals(content))
        v.push(
          `${f.rel}: object ${rec.object_key} differs: ${body.length} bytes (md5 ${md5(body)}) for a ${content.length}-byte file`,
        );
    } catch (err) {
      v.push(`${f.rel}: object ${rec.object_key} cannot be read: ${(err as Error).name}`);
    }
    if (opts.oneCallbackEach) {
      const n = cbs.get(`${w.ws}|${flight}/${path.basename(f.abs)}`) ?? 0;
      if (n !== 1) v.push(`${f.rel}: ${n} callbacks reached the server`);
    }
  }
  return { violations: v, records };
}

export async function expectPromiseKept(
  opts: Parameters<typeof promiseViolations>[0],
): Promise<MediaRecord[]> {
  const { violations, records } = await promiseViolations(opts);
  expect(violations).toEqual([]);
  return records;
}

/** Files under the given paths holding any of the secrets (raw bytes). */
export function findSecrets(paths: string[], secrets: Iterable<string>): string[] {
  const list = [...secrets].filter((s) => s.length >= 8);
  const hits: string[] = [];
  const visit = (p: string) => {
    let st: fs.Stats;
    try {
      st = fs.statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      for (const e of fs.readdirSync(p)) visit(path.join(p, e));
      return;
    }
    if (!st.isFile()) return;
    const buf = fs.readFileSync(p);
    for (const s of list) if (buf.includes(s)) hits.push(`${p} holds a secret (${s.slice(0, 4)}...)`);
  };
  for (const p of paths) visit(p);
  return hits;
}

/** A plain sentence for a person: no stack, no JSON, no "undefined". */
export function expectPlain(text: string): void {
  expect(text.length).toBeGreaterThan(10);
  expect(text).not.toMatch(
    /\bat \S+ \(|undefined|\[object Object\]|TypeError|SyntaxError|ReferenceError|<html|<\?xml|\{"/i,
  );
}

export { tempDir };
