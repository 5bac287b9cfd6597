import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import {
  bodyExcerpt,
  normalizeCode,
  parseRetryAfter,
  readEnvelope,
  requireSuccess,
  tryParseEnvelope,
} from './envelope.js';

const ctx = { method: 'POST', path: '/media/api/v1/workspaces/ws-1/fast-upload', secrets: ['SECRET-TOKEN'] };
const res = (status: number, text: string, headers: Record<string, string> = {}) => ({
  status,
  text,
  headers: new Headers(headers),
});
const thrown = (fn: () => unknown): DmsError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof DmsError) return e;
    throw e;
  }
  throw new Error('expected a DmsError');
};

describe('envelope parsing', () => {
  it('accepts code as a number or a numeric string', () => {
    expect(normalizeCode(0)).toBe(0);
    expect(normalizeCode('0')).toBe(0);
    expect(normalizeCode(' -1 ')).toBe(-1);
    expect(normalizeCode('E100')).toBe('E100');
    expect(normalizeCode(null)).toBeUndefined();
    expect(normalizeCode('')).toBeUndefined();
  });

  it('keeps data as sent: missing, "", or an object', () => {
    expect(tryParseEnvelope('{"code":-1,"message":"x"}')).toEqual({
      code: -1,
      message: 'x',
      data: undefined,
    });
    expect(tryParseEnvelope('{"code":"0","data":""}')).toEqual({ code: 0, message: '', data: '' });
    expect(tryParseEnvelope('[1]')).toBeUndefined();
    expect(tryParseEnvelope('{"message":"no code"}')).toBeUndefined();
    expect(tryParseEnvelope('<html>')).toBeUndefined();
  });

  it('a code 401 envelope at HTTP 200 is auth; other non-zero codes are rejected', () => {
    const env401 = readEnvelope(res(200, '{"code":401,"message":"expired"}'), ctx);
    expect(thrown(() => requireSuccess(env401, ctx)).kind).toBe('auth');
    const envNeg = readEnvelope(res(200, '{"code":-1,"message":"SECRET-TOKEN is bad"}'), ctx);
    const err = thrown(() => requireSuccess(envNeg, ctx));
    expect(err).toMatchObject({ kind: 'rejected', serverCode: -1, serverMessage: '<redacted> is bad' });
    expect(err.message).not.toContain('SECRET-TOKEN');
  });

  it('an unexpected 404 page hints at the server address', () => {
    const err = thrown(() => readEnvelope(res(404, '<html>Not Found</html>'), ctx));
    expect(err.kind).toBe('rejected');
    expect(err.message).toContain('Is the server address right?');
  });
});

describe('Retry-After', () => {
  it('reads delta-seconds and HTTP dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('bodyExcerpt', () => {
  it('is one short line without the secrets', () => {
    const text = `<html>\n  <p>${'SECRET-TOKEN '.repeat(3)}${'z'.repeat(300)}</p>`;
    const out = bodyExcerpt(text, ctx);
    expect(out).not.toContain('SECRET');
    expect(out).not.toContain('\n');
    expect(out.length).toBeLessThanOrEqual(130);
  });

  it('does not quote a JSON body that may hold credentials', () => {
    const out = bodyExcerpt('{"code":0,"data":{"credentials":{"access_key_secret":"sk', {
      ...ctx,
      sensitiveBody: true,
    });
    expect(out).not.toContain('sk');
    expect(bodyExcerpt('<html>proxy</html>', { ...ctx, sensitiveBody: true })).toContain('proxy');
    expect(bodyExcerpt('  ', ctx)).toBe('(empty body)');
  });
});
