import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DmsError } from '../../main/core/errors.js';
import { ApiClient } from '../../main/core/api/client.js';
import { classifyFailure } from '../../main/core/api/transport.js';

/**
 * TLS: a certificate the system does not trust must fail loudly as `network`
 * with a message that says the certificate was rejected, never be skipped.
 */

// Self-signed test-only certificate for 127.0.0.1 (valid until 2126); not a secret.
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgw84Nposdm1Y3+W38
NtRIZqGFS8sG5m+4l4PEU++ry/ShRANCAARHcFowCg8RS8DbUemrSf3qUupIN4sg
GxAcHakSaANToNg/+Ny9DzzGGWvyxhd+xoMjUn7swzhY8hwJGf+Ncpwq
-----END PRIVATE KEY-----`;
const CERT = `-----BEGIN CERTIFICATE-----
MIIBsTCCAVegAwIBAgIUEtYxU2imlq0+Hifw/A5zhnBKGtswCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUZG1zLXRlc3Qtc2VsZi1zaWduZWQwIBcNMjYxMTIyMTQxMjQ4
WhgPMjEyNjEwMjkxNDEyNDhaMB8xHTAbBgNVBAMMFGRtcy10ZXN0LXNlbGYtc2ln
bmVkMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAER3BaMAoPEUvA21Hpq0n96lLq
SDeLIBsQHB2pEmgDU6DYP/jcvQ88xhlr8sYXfsaDI1J+7MM4WPIcCRn/jXKcKqNv
MG0wHQYDVR0OBBYEFIlgiMeNbrSlUaNhpfmOif/f4NjTMB8GA1UdIwQYMBaAFIlg
iMeNbrSlUaNhpfmOif/f4NjTMA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYcE
fwAAAYIJbG9jYWxob3N0MAoGCCqGSM49BAMCA0gAMEUCIQDuIt0x5RLzLgMuQKH0
3h4PgvXJCr+4ObHRviFCR6I8jAIgbi5FnUgTht131ibwmqsbFhzOyvcTnQwH4qp2
f0kEqYs=
-----END CERTIFICATE-----`;

let server: https.Server | undefined;
afterEach(async () => {
  if (server === undefined) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  server = undefined;
});

const ctx = { method: 'POST', path: '/storage/api/v1/workspaces/ws-1/sts', secrets: ['tok'] };
const idle = { caller: undefined, timer: new AbortController().signal, timeoutMs: 1000 };
/** The shape undici throws: TypeError('fetch failed') with the socket error as cause. */
const fetchFailed = (code: string, message: string) =>
  new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });

describe('TLS certificates', () => {
  it('a self-signed server certificate is rejected as network, saying so', async () => {
    let reached = false;
    server = https.createServer({ key: KEY, cert: CERT }, (_req, res) => {
      reached = true;
      res.end('{"code":0}');
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = new ApiClient({ baseUrl: `https://127.0.0.1:${port}`, workspaceId: 'ws-1', token: 'tok' });
    const err = await client.getSts().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DmsError);
    expect((err as DmsError).kind).toBe('network');
    expect((err as DmsError).message).toMatch(/TLS certificate was rejected \(DEPTH_ZERO_SELF_SIGNED_CERT/);
    expect(reached).toBe(false);
  });

  it.each([
    'CERT_HAS_EXPIRED',
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'SELF_SIGNED_CERT_IN_CHAIN',
    'ERR_TLS_CERT_ALTNAME_INVALID',
  ])('%s maps to a network error about the certificate', (code) => {
    const err = classifyFailure(fetchFailed(code, 'certificate problem'), ctx, idle);
    expect(err.kind).toBe('network');
    expect(err.message).toContain(`certificate was rejected (${code}`);
    expect(err.path).toBe(ctx.path);
  });
});

describe('other transport failures', () => {
  it.each([
    ['ENOTFOUND', /could not be resolved/],
    ['ECONNRESET', /reset/],
    ['ECONNREFUSED', /refused the connection/],
  ])('%s is network with a plain reason', (code, text) => {
    const err = classifyFailure(fetchFailed(code, `connect ${code}`), ctx, idle);
    expect(err.kind).toBe('network');
    expect(err.message).toMatch(text);
  });

  it('the caller wins over the timer when both fired', () => {
    const both = { caller: AbortSignal.abort(), timer: AbortSignal.abort(), timeoutMs: 5 };
    expect(classifyFailure(new DOMException('x', 'AbortError'), ctx, both).kind).toBe('cancelled');
    const timerOnly = { caller: new AbortController().signal, timer: AbortSignal.abort(), timeoutMs: 5 };
    expect(classifyFailure(new DOMException('x', 'TimeoutError'), ctx, timerOnly).kind).toBe('timeout');
  });
});
