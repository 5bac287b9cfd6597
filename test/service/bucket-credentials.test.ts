/**
 * The service checks that it can get bucket credentials: at start (a role
 * limit below --sts-expire is refused with the fix), in /readyz (a load
 * balancer takes an instance whose STS gives none out of rotation), and it
 * logs the provider's own reason. The STS is a STUB of Ceph RGW's, with the
 * bodies a real one sent (sts-stub.ts says why); the peer tier asks the
 * real RGW (test/peers/ceph/sts-limit.peer.test.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProviderError, providerReason } from '../../main/service/bucket/types.js';
import { BucketCredentialsError, CODES } from '../../main/service/index.js';
import { call, paths, startTemp } from './helpers.js';
import { RGW, stsStub } from './sts-stub.js';

const stub = stsStub();
beforeAll(() => stub.start());
afterAll(() => stub.stop());

const bucket = stub.bucket;

/** A logger whose lines the test reads. */
function captured() {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  return { logger, text: () => lines.join('') };
}

describe('bucket credentials at start', () => {
  it('a role limit below --sts-expire stops the start with the fix, found by asking the STS', async () => {
    stub.mode = 'rgw';
    const before = stub.calls;
    const start = startTemp({ externalBucket: bucket(), stsExpireSeconds: 7200 });
    // Before: the service started, and every sts request answered 502001.
    await expect(start).rejects.toBeInstanceOf(BucketCredentialsError);
    await expect(start).rejects.toThrow(
      "for 7200 s (--sts-expire): the role allows 3600 s; lower --sts-expire or raise the role's MaxSessionDuration.",
    );
    await expect(start).rejects.toThrow('HTTP 400 InvalidArgument (request tx000001ebb12021c4add65');
    // The limit is searched for, in a bounded number of calls.
    expect(stub.calls - before).toBeLessThanOrEqual(1 + 1 + 16);
  });

  it("a refusal that is not about the lifetime names the provider's answer and the settings to check", async () => {
    stub.mode = 'deny';
    await expect(startTemp({ externalBucket: bucket(), stsExpireSeconds: 3600 })).rejects.toThrow(
      "The bucket's STS refuses credentials (HTTP 403 AccessDenied (request tx0000007aed611b0151f16-006b09cbec-100e-default)). Check accessKeyId, secretAccessKey and roleArn",
    );
  });
});

describe('bucket credentials in /readyz and the log', () => {
  it('ready while the STS gives credentials, 503005 while it refuses (the reason logged once), ready again after', async () => {
    stub.mode = 'rgw';
    const log = captured();
    const s = await startTemp({
      externalBucket: bucket(),
      stsExpireSeconds: 3600,
      logger: log.logger,
      limits: { bucketCheckSeconds: 1 },
    });
    try {
      expect((await call(s, 'GET', '/readyz', { token: null })).status).toBe(200);
      // Many checks, few STS calls: the answer is kept for bucketCheckSeconds.
      const before = stub.calls;
      for (let i = 0; i < 10; i++) await call(s, 'GET', '/readyz', { token: null });
      expect(stub.calls - before).toBeLessThanOrEqual(2);

      stub.mode = 'deny';
      const sts = await call(s, 'POST', paths(s.workspaceId).sts);
      expect([sts.status, sts.body.code]).toEqual([502, CODES.STORAGE_PROVIDER_FAILED]);
      // The client gets no provider text; the log has the provider's own answer (before: only "UnknownError").
      expect(sts.body.message).not.toContain('AccessDenied');
      expect(log.text()).toContain(
        'storage provider failed: HTTP 403 AccessDenied (request tx0000007aed611b0151f16',
      );
      expect(log.text()).not.toContain('UnknownError');
      // Before: 200 all along, so a load balancer kept sending crews here.
      const ready = await call(s, 'GET', '/readyz', { token: null });
      expect([ready.status, ready.body.code]).toEqual([503, CODES.BUCKET_CREDENTIALS_UNAVAILABLE]);
      expect(ready.body.message).toMatch(
        /cannot get bucket credentials.*the operator finds the reason in its log/,
      );
      expect(log.text().match(/the STS gives none/g)).toHaveLength(1);

      stub.mode = 'rgw';
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = (await call(s, 'GET', '/readyz', { token: null })).status;
      }
      expect(status).toBe(200);
      expect(log.text()).toContain('bucket credentials: the STS gives them again');
      // Health checks are not access-logged at info.
      expect(log.text()).not.toMatch(/"url":"\/readyz"/);
    } finally {
      await s.stop();
    }
  });

  it('an STS that cannot be reached: the service starts (it may come back) and is not ready', async () => {
    const log = captured();
    const s = await startTemp({
      externalBucket: { ...bucket(), stsEndpoint: 'http://127.0.0.1:9' },
      logger: log.logger,
    });
    try {
      const ready = await call(s, 'GET', '/readyz', { token: null });
      expect([ready.status, ready.body.code]).toEqual([503, CODES.BUCKET_CREDENTIALS_UNAVAILABLE]);
      expect(log.text()).toMatch(/bucket credentials: the STS gives none \([^)]*ECONNREFUSED/);
    } finally {
      await s.stop();
    }
  });

  it('an STS that takes the request and never answers: given up after providerIdleMs, as one that cannot be reached', async () => {
    // Before: the SDK's requests had no idle limit, and the start waited for ever.
    const held = new Set<http.ServerResponse>();
    const silent = http.createServer((_req, res) => void held.add(res));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const log = captured();
    try {
      const s = await startTemp({
        externalBucket: {
          ...bucket(),
          stsEndpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        },
        logger: log.logger,
        limits: { providerIdleMs: 500 },
      });
      try {
        expect(held.size).toBeGreaterThanOrEqual(1);
        const ready = await call(s, 'GET', '/readyz', { token: null });
        expect([ready.status, ready.body.code]).toEqual([503, CODES.BUCKET_CREDENTIALS_UNAVAILABLE]);
        expect(log.text()).toMatch(/bucket credentials: the STS gives none \([^)]*(timed out|inactivity)/);
      } finally {
        await s.stop();
      }
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("the provider's refusal, read", () => {
  it("RGW's S3-form <Error> and AWS STS's <ErrorResponse>, entities decoded", () => {
    expect(providerReason(parseProviderError(400, RGW.tooLong))).toEqual({
      text: 'HTTP 400 InvalidArgument (request tx000001ebb12021c4add65-006b09c958-100e-default)',
      status: 400,
    });
    // AWS's documented form (STS API reference, "Errors"): Type, Code and Message inside ErrorResponse.
    const aws =
      '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>ValidationError</Code>' +
      '<Message>The requested DurationSeconds exceeds the MaxSessionDuration set for this role.</Message></Error>' +
      '<RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>';
    expect(providerReason(parseProviderError(400, aws)).text).toBe(
      'HTTP 400 ValidationError: The requested DurationSeconds exceeds the MaxSessionDuration set for this role. (request c6104cbe-af31-11e0-8154-cbc7ccf896c7)',
    );
    expect(
      parseProviderError(
        403,
        '<Error><Code>AccessDenied</Code><Message>Can&apos;t &amp; won&apos;t</Message></Error>',
      ).providerMessage,
    ).toBe("Can't & won't");
    expect(providerReason(parseProviderError(502, '<html>Bad gateway</html>'))).toEqual({
      text: 'HTTP 502',
      status: 502,
    });
  });
});
