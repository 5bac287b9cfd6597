import { causeCode, DmsError, isAbortError } from '../errors.js';
import { redact } from './envelope.js';
import type { RawResponse, RequestContext } from './envelope.js';
import type { Exchange, HttpAnswer } from './exchange.js';

/**
 * One HTTP exchange with a deadline that covers the whole answer (headers AND
 * body: a server that stalls mid-body must not hang an upload slot), a cap
 * on the body size, and classification of every transport failure.
 */

export interface TransportRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers: Record<string, string>;
  body?: string;
  /** The caller's signal: when it fires the error is `cancelled`. */
  signal?: AbortSignal;
  timeoutMs: number;
  maxBodyBytes: number;
  /** Who carries the exchange: undici's request() by default (see exchange.ts). */
  exchange: Exchange;
}

export async function send(req: TransportRequest, ctx: RequestContext): Promise<RawResponse> {
  const caller = req.signal;
  if (caller?.aborted === true) {
    throw new DmsError('cancelled', `The request ${ctx.method} ${ctx.path} was cancelled.`, {
      method: ctx.method,
      path: ctx.path,
    });
  }
  if (!(req.timeoutMs > 0) || !Number.isFinite(req.timeoutMs)) {
    throw new DmsError('invalid-input', 'timeoutMs must be a positive number.', {
      method: ctx.method,
      path: ctx.path,
    });
  }
  // One controller per call, fired by the deadline or by the caller (cheaper
  // than AbortSignal.timeout + AbortSignal.any, which showed in profiles).
  const controller = new AbortController();
  const timer = { aborted: false };
  const deadline = setTimeout(() => {
    timer.aborted = true;
    controller.abort(new DOMException('The deadline passed.', 'TimeoutError'));
  }, req.timeoutMs);
  const onCallerAbort = (): void => controller.abort(caller?.reason);
  caller?.addEventListener('abort', onCallerAbort, { once: true });
  const signal = controller.signal;
  try {
    const answer = await req.exchange({
      method: req.method,
      url: req.url,
      headers: req.headers,
      ...(req.body === undefined ? {} : { body: req.body }),
      signal,
    });
    const text = await readCapped(answer, req.maxBodyBytes, ctx);
    return { status: answer.status, headers: answer.headers, text };
  } catch (err) {
    throw classifyFailure(err, ctx, { caller, timer, timeoutMs: req.timeoutMs });
  } finally {
    clearTimeout(deadline);
    caller?.removeEventListener('abort', onCallerAbort);
  }
}

async function readCapped(res: HttpAnswer, max: number, ctx: RequestContext): Promise<string> {
  const tooBig = () =>
    new DmsError(
      'malformed-response',
      `The answer to ${ctx.method} ${ctx.path} is larger than ${max} bytes.`,
      {
        method: ctx.method,
        path: ctx.path,
        status: res.status,
        // Too large, said so (issue 30: a 50 MB waylines page was "not a valid answer").
        plain: `The server's answer is too large (more than ${Math.round(max / 1024 / 1024)} MB, the most this app reads), so it was not used. If it is a list, ask for fewer at a time (waylines --page-size 10); otherwise tell the server's administrator.`,
      },
    );
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.discard();
    throw tooBig();
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const value of res.body) {
    total += value.byteLength;
    if (total > max) {
      await res.discard();
      throw tooBig();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

const NETWORK_TEXT: Record<string, string> = {
  ECONNREFUSED: 'the server refused the connection (is it running, is the port right?)',
  ECONNRESET: 'the connection was reset before the answer was complete',
  UND_ERR_SOCKET: 'the connection was closed before the answer was complete',
  ENOTFOUND: 'the server name could not be resolved (check the address and the network)',
  EAI_AGAIN: 'the server name could not be resolved right now (DNS unavailable)',
  ETIMEDOUT: 'the connection attempt timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection attempt timed out',
  EHOSTUNREACH: 'the server host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  EPIPE: 'the connection was closed while sending',
};

/** Whether an error or one of its causes is as `test` wants. */
function inChain(err: unknown, test: (e: Error) => boolean): boolean {
  let cur: unknown = err;
  for (let depth = 0; depth < 8 && cur instanceof Error; depth++) {
    if (test(cur)) return true;
    cur = cur.cause;
  }
  return false;
}

interface AbortState {
  caller: AbortSignal | undefined;
  /** Whether the call's deadline fired. */
  timer: { readonly aborted: boolean };
  timeoutMs: number;
}

/** Turns whatever the exchange or the body read threw into a DmsError. Exported for tests of the TLS mapping. */
export function classifyFailure(err: unknown, ctx: RequestContext, state: AbortState): DmsError {
  if (err instanceof DmsError) return err;
  const opts = { cause: err, method: ctx.method, path: ctx.path };
  const w = `${ctx.method} ${ctx.path}`;
  // The caller is checked first: a pause during a slow answer is a pause, not a timeout.
  if (state.caller?.aborted === true)
    return new DmsError('cancelled', `The request ${w} was cancelled.`, opts);
  if (state.timer.aborted) {
    return new DmsError(
      'timeout',
      `No complete answer from the server within ${state.timeoutMs} ms for ${w}.`,
      opts,
    );
  }
  if (isAbortError(err)) return new DmsError('cancelled', `The request ${w} was cancelled.`, opts);
  const found = causeCode(err);
  if (found?.code === 'ERR_SSL_WRONG_VERSION_NUMBER' || found?.code === 'ERR_SSL_HTTP_REQUEST') {
    // https:// to a server speaking plain HTTP: nothing is wrong with a certificate.
    return new DmsError(
      'network',
      `The server at this address speaks plain HTTP, not HTTPS (${found.code}) for ${w}.`,
      {
        ...opts,
        plain:
          'The server at this address speaks plain HTTP, not HTTPS. Use the address with http:// (or ask for its https:// address).',
      },
    );
  }
  if (found !== undefined && (TLS_CODES.has(found.code) || found.code.startsWith('ERR_SSL_'))) {
    // Never retried insecurely: the user must fix the certificate or trust its CA.
    return new DmsError(
      'network',
      `The server's TLS certificate was rejected (${found.code}: ${found.message}) for ${w}. ` +
        'Fix the certificate or install its CA certificate on this computer; the connection is never made without checking it.',
      opts,
    );
  }
  if (inChain(err, (e) => e.name === 'HTTPParserError')) {
    // Something listens there but does not speak HTTP (an SSH or database port...).
    return new DmsError(
      'malformed-response',
      `The answer to ${w} is not HTTP: something else listens at this address and port.`,
      opts,
    );
  }
  const known = found === undefined ? undefined : NETWORK_TEXT[found.code];
  if (known !== undefined && found !== undefined) {
    return new DmsError('network', `Could not reach the server for ${w}: ${known} (${found.code}).`, opts);
  }
  const detail = found?.message ?? (err instanceof Error ? err.message : String(err));
  return new DmsError(
    'network',
    `Could not reach the server for ${w}: ${redact(detail, ctx.secrets)}.`,
    opts,
  );
}
