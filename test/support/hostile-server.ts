/**
 * A hostile or misbehaving contract server for tests (issue 22): the real
 * reference service and its embedded bucket (startService), each behind a
 * recording proxy on 127.0.0.1 (test/faults/proxy.ts, set up by the fault
 * rig), with knobs that replace or rewrite chosen answers. What is not
 * overridden is the real service's own answer, so an agent gets as far as a
 * real server lets it, and every byte it sends to a bucket is seen in
 * `bucket.records`.
 *
 *   const h = await startHostileServer();
 *   h.answer('sts', hostile.stsWith({ bucket: '../evil' }));
 *   await syncOnce({ api: h.client(), ... });
 *   expect(h.bucket.records).toEqual([]);   // nothing reached any bucket
 *   h.clear();                              // back to the real answers
 *   await h.close();
 *
 * Knobs (see `hostile`): fast-upload "known" for everything, a callback
 * answer naming another object_key, an STS answer with code 0 and no data or
 * with hostile bucket / endpoint / region / prefix values, waylines nested
 * 10^5 levels deep, terminal escape sequences in a message. Anything else:
 * `hostile.reply(body)` or `hostile.rewrite(fn)`.
 */
import type { ApiClient, ApiClientOptions } from '../../main/core/api/client.js';
import type { RunningService } from '../../main/service/index.js';
import type { Fault, FaultProxy, Rule } from '../faults/proxy.js';
import { startRig, type Rig } from '../faults/rig.js';

/** The contract's four endpoints, and sign-in / token refresh (by the last segment of their path). */
export type Endpoint = 'waylines' | 'sts' | 'fast-upload' | 'upload-callback' | 'login' | 'refresh';

/** An answer as a server sends it: the envelope, parsed (rewrite) or as any JSON value. */
export interface EnvelopeAnswer {
  code?: unknown;
  message?: unknown;
  data?: unknown;
  [extra: string]: unknown;
}

/** What a knob does with a request: answer by itself (nothing forwarded) or forward and rewrite. */
export type HostileAnswer =
  | { kind: 'reply'; status: number; body: string }
  | { kind: 'rewrite'; fn: (answer: EnvelopeAnswer, status: number) => EnvelopeAnswer };

export interface HostileServer {
  /** The API as the agent should use it (through the recording proxy). */
  baseUrl: string;
  workspaceId: string;
  token: string;
  /** The real service behind (direct access, admin). */
  service: RunningService;
  /** Records of every API request and of every bucket request (method, path, op, key, bytes...). */
  api: FaultProxy;
  bucket: FaultProxy;
  /** Every token and bucket secret handed out (none may reach the agent's files or output). */
  secrets: Set<string>;
  /** An ApiClient of the workspace through the proxy. */
  client(opts?: Partial<ApiClientOptions>): ApiClient;
  /**
   * From now on, `endpoint` gets `answer` (the `times` next calls; default: until cleared).
   * Knobs apply in the order they were set: the first one that still applies wins, so
   * clear() before replacing one.
   */
  answer(endpoint: Endpoint, answer: HostileAnswer, times?: number): Rule;
  /** Back to the real service's answers. */
  clear(): void;
  close(): Promise<void>;
}

/** JSON nested `depth` levels deep around `leaf` (`{"a":{"a":...}}`), built as text: no recursion. */
export function nestedJson(depth: number, leaf = '1'): string {
  return `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;
}

const envelopeText = (a: EnvelopeAnswer): string => JSON.stringify(a);

/** Ready-made knobs. */
export const hostile = {
  /** Answers by itself, without the service: `body` is sent as is (string) or as JSON. */
  reply(body: string | EnvelopeAnswer, status = 200): HostileAnswer {
    return { kind: 'reply', status, body: typeof body === 'string' ? body : envelopeText(body) };
  },
  /** Forwards to the service, then answers what `fn` makes of its (parsed) answer. */
  rewrite(fn: (answer: EnvelopeAnswer, status: number) => EnvelopeAnswer): HostileAnswer {
    return { kind: 'rewrite', fn };
  },
  /** fast-upload: code 0 ("known") for every fingerprint, nothing checked. */
  knownForEverything(): HostileAnswer {
    return hostile.reply({ code: 0, message: 'success', data: {} });
  },
  /** upload-callback: the service records the callback, the answer names `objectKey` instead. */
  callbackNaming(objectKey: string): HostileAnswer {
    return hostile.rewrite((a) => ({ ...a, data: { object_key: objectKey } }));
  },
  /** sts: code 0 and no `data` at all (a broken storage configuration). */
  stsWithoutData(): HostileAnswer {
    return hostile.reply({ code: 0, message: 'success' });
  },
  /** sts: the real answer (valid credentials, endpoint = the recording bucket proxy) with fields replaced. */
  stsWith(fields: {
    bucket?: string;
    endpoint?: string;
    region?: string;
    object_key_prefix?: string;
  }): HostileAnswer {
    return hostile.rewrite((a) => ({ ...a, data: { ...(a.data as object), ...fields } }));
  },
  /** waylines: a valid page whose one item carries `field` nested `depth` levels deep. */
  waylinesNested(depth: number, field = 'start_wayline_point'): HostileAnswer {
    const item = `{"id":"w-1","name":"Deep","${field}":${nestedJson(depth)}}`;
    return hostile.reply(
      `{"code":0,"message":"success","data":{"list":[${item}],"pagination":{"page":1,"page_size":10,"total":1}}}`,
    );
  },
  /** Any endpoint: a refusal whose message is `message` (e.g. terminal escape sequences). */
  message(message: string, code = -1): HostileAnswer {
    return hostile.reply({ code, message });
  },
};

/** A message that would clear a terminal and print a fake verdict in green, if shown raw. */
export const ESCAPE_MESSAGE = '\u001b[2J\u001b[H\u001b[32mSAFE TO FORMAT\u001b[0m\r\n\u202egpj.exe';

function toFault(answer: HostileAnswer): Fault {
  if (answer.kind === 'reply') return { kind: 'respond', status: answer.status, body: answer.body };
  return {
    kind: 'rewrite',
    fn: (body, status) => {
      let parsed: EnvelopeAnswer;
      try {
        parsed = JSON.parse(body) as EnvelopeAnswer;
      } catch {
        return { body, status }; // not JSON (an empty 401): left as it is
      }
      return { status, body: envelopeText(answer.fn(parsed, status)) };
    },
  };
}

export async function startHostileServer(): Promise<HostileServer> {
  const rig: Rig = await startRig({ prefix: 'dms-hostile-' });
  const ws = await rig.workspace('Hostile');
  return {
    baseUrl: rig.service.url,
    workspaceId: ws.ws,
    token: ws.token,
    service: rig.svc,
    api: rig.service,
    bucket: rig.bucket,
    secrets: rig.secrets,
    client: (opts) => ws.api(opts),
    answer(endpoint, answer, times = 1_000_000) {
      return rig.service.inject({
        name: `hostile ${endpoint}`,
        match: (r) => r.op === endpoint,
        fault: toFault(answer),
        times,
      });
    },
    clear: () => rig.service.clearRules(),
    close: () => rig.close(),
  };
}
