/**
 * A throw-away one-node Ceph cluster with its RADOS Gateway (radosgw), the
 * real S3 engine of the peer tests: SigV4 verified, STS AssumeRole with
 * session policies, multipart with ListParts. Debian's packages
 * (`ceph-mon ceph-osd radosgw`, Pacific 16.2), no systemd, no cephx, one
 * memstore OSD (objects in RAM), everything on 127.0.0.1 on free ports, data
 * in a temp folder. Ready in about 3 s when the packages are installed.
 *
 *   const rgw = await startRgw();   // endpoint, user keys, role ARN, bucket
 *   ...
 *   await rgw.stop();               // rgw, then the OSD, then the mon
 *
 * `fakeClock: true` starts radosgw under libfaketime (Debian `faketime`)
 * with an offset the test moves with setClockOffset(): the only way here to
 * let RGW see a session token expire, whose shortest life is 900 s.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import {
  alive,
  CLUSTER_DIR_PREFIX,
  freePorts,
  killDaemonsNow,
  run,
  startDaemon,
  stopDaemons,
  sweepStaleClusters,
  tail,
  type Daemon,
} from './daemons.js';
import { cephConf } from './conf.js';

const PACKAGES = ['ceph-mon', 'ceph-osd', 'radosgw', 'faketime'];

export interface Rgw {
  /** http://127.0.0.1:<port>: S3 and STS. */
  endpoint: string;
  /** RGW ignores it, but SigV4 needs one. */
  region: string;
  bucket: string;
  /** The RGW user's long-term keys (owner of the bucket; may assume the role). */
  accessKeyId: string;
  secretAccessKey: string;
  /** A role the user may assume, with s3:* on the bucket. */
  roleArn: string;
  dir: string;
  /** Startup figures in ms, and the three daemons' memory (MiB) when ready. */
  figures: { bootMs: number; setupMs: number; rssMiB: number };
  /** The gateway's log (one line per request, and its errors, e.g. "ERROR: Token expired"). */
  log(): string;
  /** Current resident memory of mon + osd + rgw, MiB. */
  rssMiB(): number;
  /** The process ids of mon, osd and rgw (for CPU accounting). */
  pids(): number[];
  /** Moves radosgw's wall clock to real time + `seconds` (fakeClock only); resolves once RGW answers with it. */
  setClockOffset(seconds: number): Promise<void>;
  stop(): Promise<void>;
}

/** Why the cluster cannot be started here, or null when everything is installed. */
function missingPackages(): string | null {
  const need = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph', 'monmaptool'].filter(
    (c) => !onPath(c),
  );
  if (fakeTimeLibrary() === null) need.push('libfaketime');
  if (need.length === 0) return null;
  return `Ceph or libfaketime is not installed (missing: ${need.join(', ')}). Run: apt-get install --no-install-recommends ${PACKAGES.join(' ')}`;
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .some((d) => d !== '' && fs.existsSync(path.join(d, cmd)));
}

/** libfaketime's multi-threaded build (radosgw is heavily threaded), wherever the distribution put it. */
function fakeTimeLibrary(): string | null {
  const dirs = ['/usr/lib', '/usr/local/lib'].flatMap((base) => [
    base,
    ...(fs.existsSync(base) ? fs.readdirSync(base).map((d) => path.join(base, d)) : []),
  ]);
  return (
    dirs.map((d) => path.join(d, 'faketime', 'libfaketimeMT.so.1')).find((f) => fs.existsSync(f)) ?? null
  );
}

const random = (alphabet: string, n: number): string =>
  Array.from(crypto.randomBytes(n), (b) => alphabet[b % alphabet.length]).join('');
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const ALNUM = `${UPPER_DIGITS}abcdefghijklmnopqrstuvwxyz`;

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  daemon: Daemon,
  ms: number,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (!alive(daemon.pid))
      throw new Error(`${daemon.name} ended while waiting for ${what}:\n${tail(daemon)}`);
    if (Date.now() > end) throw new Error(`${what}: not within ${ms / 1000} s:\n${tail(daemon)}`);
    await sleep(100);
  }
}

/** Pools radosgw would otherwise create one by one on its first writes (seconds of mon round trips). */
const RGW_POOLS = [
  '.rgw.root',
  'default.rgw.log',
  'default.rgw.control',
  'default.rgw.meta',
  'default.rgw.buckets.index',
  'default.rgw.buckets.data',
  'default.rgw.buckets.non-ec',
];

export async function startRgw(opts: { fakeClock?: boolean } = {}): Promise<Rgw> {
  const missing = missingPackages();
  if (missing !== null) throw new Error(missing);
  await sweepStaleClusters();
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), CLUSTER_DIR_PREFIX));
  for (const sub of ['run', 'log', 'pids', 'mon.a', 'osd.0']) fs.mkdirSync(path.join(dir, sub));
  fs.writeFileSync(path.join(dir, 'owner.pid'), String(process.pid));
  const [monV2, monV1, rgwPort] = (await freePorts(3)) as [number, number, number];
  const conf = path.join(dir, 'ceph.conf');
  const fsid = crypto.randomUUID();
  fs.writeFileSync(
    conf,
    cephConf({
      dir,
      fsid,
      monV2,
      monV1,
      rgwPort,
      stsKey: random('abcdefghijklmnopqrstuvwxyz0123456789', 16),
    }),
  );
  const daemons: Daemon[] = [];
  const onExit = (): void => killDaemonsNow([...daemons].reverse());
  process.once('exit', onExit);
  const clockFile = path.join(dir, 'rgw.faketime');
  const ceph = (args: string[], input?: string): Promise<string> =>
    run('ceph', ['-c', conf, '--connect-timeout', '10', ...args], input !== undefined ? { input } : {});
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await stopDaemons([...daemons].reverse());
    process.removeListener('exit', onExit);
    // DMS_PEER_KEEP=1 keeps the logs for a post-mortem (the daemons are stopped all the same).
    if (process.env.DMS_PEER_KEEP === '1' && fs.existsSync(dir)) {
      fs.rmSync(path.join(dir, 'owner.pid'), { force: true });
      fs.renameSync(dir, `${dir}-kept`);
      console.log(`RGW cluster logs kept in ${dir}-kept`);
    } else fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    // 1. The monitor.
    const monAddr = `[v2:127.0.0.1:${monV2},v1:127.0.0.1:${monV1}]`;
    await run('monmaptool', [
      '--create',
      '--clobber',
      '--fsid',
      fsid,
      '--addv',
      'a',
      monAddr,
      `${dir}/monmap`,
    ]);
    await run('ceph-mon', ['-c', conf, '--mkfs', '-i', 'a', '--monmap', `${dir}/monmap`]);
    const mon = startDaemon(dir, 'mon', 'ceph-mon', ['-c', conf, '-i', 'a'], { cephName: 'mon.a' });
    daemons.push(mon);
    await waitFor('the monitor', async () => (await ceph(['mon', 'stat']), true), mon, 30_000);

    // 2. One OSD keeping objects in RAM, and the gateway's pools.
    const osdUuid = crypto.randomUUID();
    await ceph(['osd', 'new', osdUuid]);
    await run('ceph-osd', ['-c', conf, '-i', '0', '--mkfs', '--osd-uuid', osdUuid]);
    const osd = startDaemon(dir, 'osd', 'ceph-osd', ['-c', conf, '-i', '0'], { cephName: 'osd.0' });
    daemons.push(osd);
    await ceph(
      [],
      RGW_POOLS.map((p) => `osd pool create ${p} 8 8\nosd pool application enable ${p} rgw\n`).join(''),
    );
    await waitFor('the OSD', async () => / 1 up/.test(await ceph(['osd', 'stat'])), osd, 30_000);

    // 3. The gateway (under libfaketime when asked).
    if (opts.fakeClock) fs.writeFileSync(clockFile, '+0\n');
    const env = opts.fakeClock
      ? {
          ...process.env,
          LD_PRELOAD: fakeTimeLibrary() ?? '',
          FAKETIME_TIMESTAMP_FILE: clockFile,
          // Re-read the file at every clock call: a jump takes effect at once.
          FAKETIME_NO_CACHE: '1',
          // Only the wall clock moves: timeouts and heartbeats run on the monotonic one.
          DONT_FAKE_MONOTONIC: '1',
        }
      : process.env;
    const rgw = startDaemon(dir, 'rgw', 'radosgw', ['-c', conf, '-n', 'client.rgw.gw'], {
      cephName: 'client.rgw.gw',
      env,
    });
    daemons.push(rgw);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitFor('radosgw to answer', async () => (await fetch(endpoint)).ok, rgw, 60_000);
    const bootMs = Date.now() - t0;

    // 4. User, role, role policy, bucket.
    const t1 = Date.now();
    const accessKeyId = random(UPPER_DIGITS, 20);
    const secretAccessKey = random(ALNUM, 40);
    const bucket = 'dms-peer';
    const admin = (args: string[]): Promise<string> => run('radosgw-admin', ['-c', conf, ...args]);
    await admin([
      'user',
      'create',
      '--uid=dms-tester',
      '--display-name=dms-tester',
      `--access-key=${accessKeyId}`,
      `--secret-key=${secretAccessKey}`,
    ]);
    const trust = {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { AWS: ['arn:aws:iam:::user/dms-tester'] },
          Action: ['sts:AssumeRole'],
        },
      ],
    };
    const role = JSON.parse(
      await admin([
        'role',
        'create',
        '--role-name=dms-upload',
        '--path=/',
        `--assume-role-policy-doc=${JSON.stringify(trust)}`,
      ]),
    ) as { Arn?: string };
    if (!role.Arn) throw new Error('radosgw-admin role create answered no Arn');
    const rolePolicy = {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Action: ['s3:*'],
          Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`],
        },
      ],
    };
    await admin([
      'role-policy',
      'put',
      '--role-name=dms-upload',
      '--policy-name=bucket-access',
      `--policy-doc=${JSON.stringify(rolePolicy)}`,
    ]);
    // radosgw-admin 16.x cannot create buckets: the user does, over S3.
    const s3 = new S3Client({
      endpoint,
      region: 'default',
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey },
    });
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    } finally {
      s3.destroy();
    }
    const rssMiB = (): number => daemons.reduce((sum, d) => sum + rss(d.pid), 0);

    return {
      endpoint,
      region: 'default',
      bucket,
      accessKeyId,
      secretAccessKey,
      roleArn: role.Arn,
      dir,
      figures: { bootMs, setupMs: Date.now() - t1, rssMiB: rssMiB() },
      log: () => fs.readFileSync(path.join(dir, 'log', 'client.rgw.gw.log'), 'utf8'),
      rssMiB,
      pids: () => daemons.map((d) => d.pid),
      async setClockOffset(seconds) {
        if (!opts.fakeClock) throw new Error('setClockOffset needs startRgw({ fakeClock: true })');
        const tmp = `${clockFile}.tmp`;
        fs.writeFileSync(tmp, `${seconds >= 0 ? '+' : ''}${Math.round(seconds)}\n`);
        fs.renameSync(tmp, clockFile);
        await waitFor(
          `radosgw's clock at ${seconds} s`,
          async () => {
            const date = (await fetch(endpoint, { method: 'HEAD' })).headers.get('date');
            return date !== null && Math.abs(Date.parse(date) - (Date.now() + seconds * 1000)) < 2_000;
          },
          rgw,
          10_000,
        );
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function rss(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? 0 : Math.round(Number(kb) / 1024);
  } catch {
    return 0;
  }
}
