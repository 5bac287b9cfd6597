/**
 * A fault-injecting reverse proxy for the fault suites (issue 7): node:http on
 * 127.0.0.1, port 0, in front of the reference service or its bucket. Every
 * request is classified (service endpoint or S3 operation), logged with what
 * happened to it, and either passed through or given a fault by the first
 * active rule that matches. Rules are bounded: each one has a count and/or a
 * time limit and stops by itself. Traffic goes only to 127.0.0.1.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export type ProxyKind = 'service' | 'bucket';

/** What a rule or a hook sees of a request. */
export interface ProxyRequest {
  id: number;
  kind: ProxyKind;
  method: string;
  /** URL path, decoded for bucket keys. */
  path: string;
  query: URLSearchParams;
  /** service: last path segment (`sts`, `fast-upload`, `upload-callback`...); bucket: S3 operation. */
  op: string;
  /** bucket: object key (without the bucket name). */
  key?: string;
  /** bucket UploadPart: part number. */
  partNumber?: number;
  contentLength: number | null;
  /** Free label set by the test (e.g. the run number of a CLI process). */
  tag: string;
}

/** One request as it went, for assertions and figures. */
export interface ProxyRecord extends ProxyRequest {
  fault: string;
  /** The request reached the real server or bucket. */
  forwarded: boolean;
  /** Body bytes received from the client. */
  requestBytes: number;
  /** service: the request body (small JSON). */
  requestBody?: string;
  /** service: the real server's answer body (small JSON). */
  upstreamBody?: string;
  upstreamStatus: number | null;
  /** The real server/bucket answered completely. */
  upstreamCompleted: boolean;
  /** Status the client was sent (null: connection cut, no answer). */
  clientStatus: number | null;
  /** The client got a complete answer. */
  clientAnswered: boolean;
  startedAt: number;
  endedAt: number | null;
}

export type Fault =
  | { kind: 'pass' }
  /** Wait, then forward. */
  | { kind: 'delay'; ms: number }
  /** Forward at once (the server does the work), hold the answer back for `ms`. */
  | { kind: 'late-answer'; ms: number }
  /** Answer by ourselves without forwarding. readBody false: answer at once and close (as S3 gates do). */
  | { kind: 'respond'; status: number; body: string; headers?: Record<string, string>; readBody?: boolean }
  /** Cut the connection: on arrival (nothing forwarded), mid-request body, or mid-answer (after the server did the work). */
  | { kind: 'reset'; at: 'arrival' | 'mid-request' | 'mid-response' }
  /** Forward, let the server finish, then cut the connection: the answer is lost. */
  | { kind: 'drop-answer' }
  /** Forward, then replace the answer (status and/or body). */
  | {
      kind: 'rewrite';
      fn: (
        body: string,
        status: number,
      ) => { status?: number; body: string; headers?: Record<string, string | null> };
    };

export interface Hooks {
  /** Before anything is forwarded (awaited). */
  onArrival?: (r: ProxyRequest) => void | Promise<void>;
  /** Once, when half the request body has arrived (bodies of 64 KiB and more). */
  onHalfBody?: (r: ProxyRequest) => void;
  /** The real server answered; before the answer is relayed (awaited). */
  beforeRelay?: (r: ProxyRequest, upstreamStatus: number) => void | Promise<void>;
}

export interface RuleSpec {
  name: string;
  match?: (r: ProxyRequest) => boolean;
  /** A fixed fault, or one chosen per request (null: let this request pass, uncounted). */
  fault: Fault | ((r: ProxyRequest) => Fault | null);
  hooks?: Hooks;
  /** How many requests it applies to. */
  times?: number;
  /** For how long (from now) it is active. */
  forMs?: number;
}

export interface Rule {
  readonly name: string;
  readonly applied: number;
  readonly active: boolean;
  /** Stops the rule now. */
  stop(): void;
}

export interface ProxyOptions {
  kind: ProxyKind;
  /** The real server, e.g. http://127.0.0.1:1234. */
  target: string;
  /** Applied to every relayed service answer (e.g. the STS endpoint rewrite). */
  transform?: (r: ProxyRequest, body: string, status: number) => string;
}

export interface FaultProxy {
  readonly url: string;
  readonly port: number;
  readonly records: readonly ProxyRecord[];
  /** Applied faults by rule name (with their fault kind). */
  readonly faultCounts: ReadonlyMap<string, number>;
  tag: string;
  inject(spec: RuleSpec): Rule;
  /** Stops every rule. */
  clearRules(): void;
  /** Closes the listener (connections refused) and cuts open connections; `accept()` reopens on the same port. */
  refuse(): Promise<void>;
  accept(): Promise<void>;
  readonly refusing: boolean;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'proxy-connection',
  'upgrade',
  'expect',
  'te',
  'trailer',
]);
/** A hard ceiling per rule, whatever the spec says: no fault goes on forever. */
const RULE_HARD_CAP = 1_000_000;

export function s3Op(method: string, query: URLSearchParams, key: string | undefined): string {
  if (key === undefined || key === '') return method === 'GET' ? 'ListObjects' : `${method}Bucket`;
  if (method === 'PUT') return query.has('partNumber') && query.has('uploadId') ? 'UploadPart' : 'PutObject';
  if (method === 'POST')
    return query.has('uploads')
      ? 'CreateMultipartUpload'
      : query.has('uploadId')
        ? 'CompleteMultipartUpload'
        : 'PostObject';
  if (method === 'HEAD') return 'HeadObject';
  if (method === 'GET') return query.has('uploadId') ? 'ListParts' : 'GetObject';
  if (method === 'DELETE') return query.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject';
  return method;
}

function classify(kind: ProxyKind, req: http.IncomingMessage, id: number, tag: string): ProxyRequest {
  const url = new URL(req.url ?? '/', 'http://proxy.invalid');
  const cl = req.headers['content-length'];
  const contentLength = cl === undefined ? null : Number(cl);
  const base = { id, kind, method: req.method ?? 'GET', query: url.searchParams, contentLength, tag };
  if (kind === 'service') {
    return { ...base, path: url.pathname, op: url.pathname.split('/').filter(Boolean).pop() ?? '' };
  }
  let pathname = url.pathname;
  try {
    pathname = decodeURIComponent(url.pathname);
  } catch {
    // keep it raw
  }
  const [, , ...rest] = pathname.split('/');
  const key = rest.join('/');
  const partNumber = url.searchParams.get('partNumber');
  return {
    ...base,
    path: pathname,
    op: s3Op(base.method, url.searchParams, key),
    ...(key !== '' ? { key } : {}),
    ...(partNumber !== null ? { partNumber: Number(partNumber) } : {}),
  };
}

function relayHeaders(
  h: http.IncomingHttpHeaders,
  length: number,
  extra?: Record<string, string | null>,
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h))
    if (!HOP_BY_HOP.has(k) && k !== 'content-length' && v !== undefined) out[k] = v;
  for (const [k, v] of Object.entries(extra ?? {})) {
    if (v === null) delete out[k.toLowerCase()];
    else out[k.toLowerCase()] = v;
  }
  out['content-length'] = length;
  return out;
}

function drain(req: http.IncomingMessage, rec: ProxyRecord, keep: boolean): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      rec.requestBytes += c.length;
      if (keep) chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve(Buffer.concat(chunks)));
    req.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

export async function startProxy(opts: ProxyOptions): Promise<FaultProxy> {
  const target = new URL(opts.target);
  if (target.hostname !== '127.0.0.1' && target.hostname !== 'localhost')
    throw new Error('the fault proxy only talks to 127.0.0.1');
  const upstreamAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const records: ProxyRecord[] = [];
  const faultCounts = new Map<string, number>();
  const rules: Array<RuleSpec & { applied: number; until: number; stopped: boolean }> = [];
  const sockets = new Set<Socket>();
  let nextId = 1;
  let refusing = false;
  let closed = false;

  const pick = (r: ProxyRequest): { name: string; fault: Fault; hooks?: Hooks } => {
    const now = Date.now();
    for (const rule of rules) {
      const limit = Math.min(rule.times ?? RULE_HARD_CAP, RULE_HARD_CAP);
      if (rule.stopped || rule.applied >= limit || now > rule.until) continue;
      if (rule.match && !rule.match(r)) continue;
      const fault = typeof rule.fault === 'function' ? rule.fault(r) : rule.fault;
      if (fault === null) continue;
      rule.applied++;
      const name = `${rule.name}:${fault.kind}`;
      faultCounts.set(name, (faultCounts.get(name) ?? 0) + 1);
      return { name, fault, ...(rule.hooks ? { hooks: rule.hooks } : {}) };
    }
    return { name: 'pass', fault: { kind: 'pass' } };
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const info = classify(opts.kind, req, nextId++, proxy.tag);
    const rec: ProxyRecord = {
      ...info,
      fault: 'pass',
      forwarded: false,
      requestBytes: 0,
      upstreamStatus: null,
      upstreamCompleted: false,
      clientStatus: null,
      clientAnswered: false,
      startedAt: Date.now(),
      endedAt: null,
    };
    records.push(rec);
    const { name, fault, hooks } = pick(info);
    rec.fault = name;
    const cut = () => {
      rec.endedAt ??= Date.now();
      req.socket.destroy();
    };
    res.on('finish', () => {
      rec.clientAnswered = true;
      rec.endedAt ??= Date.now();
    });

    if (hooks?.onArrival) await hooks.onArrival(info);
    if (fault.kind === 'reset' && fault.at === 'arrival') return cut();
    if (fault.kind === 'respond') {
      if (fault.readBody !== false) {
        const got = await drain(req, rec, opts.kind === 'service');
        if (opts.kind === 'service') rec.requestBody = got.toString('utf8');
      }
      const body = Buffer.from(fault.body);
      rec.clientStatus = fault.status;
      const headers: http.OutgoingHttpHeaders = {
        'content-type': 'application/json',
        ...fault.headers,
        'content-length': body.length,
      };
      if (fault.readBody === false) headers.connection = 'close';
      res.writeHead(fault.status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (fault.kind === 'delay') await sleep(fault.ms);
    if (req.socket.destroyed) {
      rec.endedAt = Date.now();
      return;
    }

    // Forward.
    const keepBody = opts.kind === 'service';
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers))
      if (k !== 'expect' && k !== 'connection' && k !== 'keep-alive' && v !== undefined) headers[k] = v;
    const up = http.request({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
      agent: upstreamAgent,
    });
    rec.forwarded = true;
    up.on('error', () => {
      if (!res.headersSent && !req.socket.destroyed) {
        rec.clientStatus = 502;
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('bad gateway (fault proxy: upstream failed)');
      } else cut();
    });
    const bodyChunks: Buffer[] = [];
    const half =
      info.contentLength !== null && info.contentLength >= 64 * 1024
        ? Math.floor(info.contentLength / 2)
        : null;
    let halfFired = false;
    req.on('data', (c: Buffer) => {
      rec.requestBytes += c.length;
      if (keepBody) bodyChunks.push(c);
      if (half !== null && !halfFired && rec.requestBytes >= half) {
        halfFired = true;
        hooks?.onHalfBody?.(info);
        if (fault.kind === 'reset' && fault.at === 'mid-request') {
          up.destroy();
          cut();
          return;
        }
      }
      if (!up.write(c)) {
        req.pause();
        up.once('drain', () => req.resume());
      }
    });
    req.on('end', () => {
      if (keepBody) rec.requestBody = Buffer.concat(bodyChunks).toString('utf8');
      if (fault.kind === 'reset' && fault.at === 'mid-request' && !halfFired) {
        // A body too small to be cut in the middle: cut before the server sees it.
        up.destroy();
        return cut();
      }
      up.end();
    });
    req.on('close', () => {
      if (!req.complete) up.destroy(); // the client went away mid-body
    });

    up.on('response', (ures) => {
      const chunks: Buffer[] = [];
      ures.on('data', (c: Buffer) => chunks.push(c));
      ures.on('error', () => cut());
      ures.on('end', () => {
        void (async () => {
          const status = ures.statusCode ?? 502;
          rec.upstreamStatus = status;
          rec.upstreamCompleted = true;
          let body: Buffer = Buffer.concat(chunks);
          if (opts.kind === 'service') rec.upstreamBody = body.toString('utf8');
          if (hooks?.beforeRelay) await hooks.beforeRelay(info, status);
          if (req.socket.destroyed) {
            rec.endedAt ??= Date.now();
            return;
          }
          if (fault.kind === 'drop-answer') return cut();
          if (fault.kind === 'late-answer') await sleep(fault.ms);
          let outStatus = status;
          let extra: Record<string, string | null> | undefined;
          if (opts.transform && opts.kind === 'service')
            body = Buffer.from(opts.transform(info, body.toString('utf8'), status));
          if (fault.kind === 'rewrite') {
            const out = fault.fn(body.toString('utf8'), status);
            outStatus = out.status ?? status;
            body = Buffer.from(out.body);
            extra = out.headers;
          }
          if (req.socket.destroyed) {
            rec.endedAt ??= Date.now();
            return;
          }
          rec.clientStatus = outStatus;
          // A HEAD answer has no body but the length of the object it describes.
          const length = req.method === 'HEAD' ? Number(ures.headers['content-length'] ?? 0) : body.length;
          res.writeHead(outStatus, relayHeaders(ures.headers, length, extra));
          if (fault.kind === 'reset' && fault.at === 'mid-response') {
            // Headers and half the body, then the connection dies.
            res.write(body.subarray(0, Math.floor(body.length / 2)), () => setImmediate(cut));
            if (body.length < 2) setImmediate(cut);
            return;
          }
          res.end(req.method === 'HEAD' ? undefined : body);
        })();
      });
    });
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => req.socket.destroy());
  });
  server.keepAliveTimeout = 5_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  server.on('clientError', (_err, s) => s.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  const proxy: FaultProxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    records,
    faultCounts,
    tag: '',
    get refusing() {
      return refusing;
    },
    inject(spec) {
      if (spec.times === undefined && spec.forMs === undefined)
        throw new Error(`rule ${spec.name}: give times and/or forMs (every fault must stop by itself)`);
      const rule = {
        ...spec,
        applied: 0,
        until: spec.forMs === undefined ? Infinity : Date.now() + spec.forMs,
        stopped: false,
      };
      rules.push(rule);
      return {
        name: spec.name,
        get applied() {
          return rule.applied;
        },
        get active() {
          return (
            !rule.stopped &&
            rule.applied < Math.min(rule.times ?? RULE_HARD_CAP, RULE_HARD_CAP) &&
            Date.now() <= rule.until
          );
        },
        stop() {
          rule.stopped = true;
        },
      };
    },
    clearRules() {
      for (const r of rules) r.stopped = true;
      rules.length = 0;
    },
    async refuse() {
      if (refusing || closed) return;
      refusing = true;
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await done;
    },
    async accept() {
      if (!refusing || closed) return;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      refusing = false;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const r of rules) r.stopped = true;
      const done = refusing
        ? Promise.resolve()
        : new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      upstreamAgent.destroy();
      await done;
    },
  };
  return proxy;
}
