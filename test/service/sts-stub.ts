/**
 * A STUB of Ceph RGW 16.2's STS on loopback, for the service tier: no
 * S3-compatible server that runs here (the embedded bucket, s3rver) has an
 * STS. It answers AssumeRole with the exact bodies a real RGW sent (captured
 * from the peer tier's cluster, test/peers/ceph/rgw.ts: a role made by
 * `radosgw-admin role create`, MaxSessionDuration 3600 s); the peer tier
 * asks the real one (test/peers/ceph/sts-limit.peer.test.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExternalBucketConfig } from '../../main/service/index.js';

/** RGW's answers, byte for byte as a real one sent them. */
export const RGW = {
  tooLong:
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message></Message><RequestId>tx000001ebb12021c4add65-006b09c958-100e-default</RequestId><HostId>100e-default-default</HostId></Error>',
  denied:
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message></Message><RequestId>tx0000007aed611b0151f16-006b09cbec-100e-default</RequestId><HostId>100e-default-default</HostId></Error>',
  credentials: (expiration: string) =>
    `<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>E8w9p9fRb8l0V2a1A0Q</AccessKeyId><Expiration>${expiration}</Expiration><SecretAccessKey>UTKX28SSGOVFH69DY05E6PY4J4OQMCA8RK204OK</SecretAccessKey><SessionToken>EWQpghoiRKnsElI3Cecmn</SessionToken></Credentials><AssumedRoleUser><Arn>arn:aws:sts:::assumed-role/ci-role/probe</Arn><AssumeRoleId>5dfa4a7c-b304-4efc-b5d1-6ecd2f6f5fe5:probe</AssumeRoleId></AssumedRoleUser><PackedPolicySize>0</PackedPolicySize></AssumeRoleResult></AssumeRoleResponse>`,
};

/** The stub: the role's limit of 3600 s as RGW enforces it ('rgw'), or refusing everyone ('deny'). */
export function stsStub() {
  let server: http.Server | null = null;
  let url = '';
  const stub = {
    mode: 'rgw' as 'rgw' | 'deny',
    calls: 0,
    url: () => url,
    async start(): Promise<void> {
      server = http.createServer((req, res) => {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (d: string) => (body += d));
        req.on('end', () => {
          stub.calls++;
          const form = new URLSearchParams(body);
          const duration = Number(form.get('DurationSeconds') ?? 3600);
          const answer = (status: number, xml: string) =>
            res.writeHead(status, { 'content-type': 'application/xml' }).end(xml);
          if (form.get('Action') !== 'AssumeRole') return answer(400, RGW.tooLong);
          if (stub.mode === 'deny') return answer(403, RGW.denied);
          // RGW 16.2 (rgw_sts.cc): a duration under 900 or over the role's MaxSessionDuration is EINVAL.
          if (duration < 900 || duration > 3600) return answer(400, RGW.tooLong);
          answer(200, RGW.credentials(new Date(Date.now() + duration * 1000).toISOString()));
        });
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    stop: () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
    /** An external bucket whose STS is this stub (its S3 endpoint is never reached). */
    bucket: (): ExternalBucketConfig => ({
      provider: 'minio',
      endpoint: 'http://127.0.0.1:9',
      stsEndpoint: url,
      region: 'default',
      bucket: 'ci-bucket',
      accessKeyId: 'CHEMNPRRPLU5W5NCNNY9',
      secretAccessKey: 'not-a-real-secret-key',
      roleArn: 'arn:aws:iam:::role/ci-role',
    }),
  };
  return stub;
}
