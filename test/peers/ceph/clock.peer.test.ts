/**
 * A field laptop whose clock is wrong: SigV4 requests carry their time and
 * a real S3 engine refuses them beyond 15 minutes of skew
 * (RequestTimeTooSkewed). radosgw runs under libfaketime (rgw.ts) with its
 * clock 20 minutes ahead of this machine's (the laptop's clock 20 minutes
 * behind), then 20 minutes behind. The agent signs again with the
 * bucket's time, as the AWS SDK does for its own requests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type RunningService } from '../../../main/service/index.js';
import { tempDir } from '../../support/harness.js';
import {
  BIN,
  expectCardInBucket,
  makeDjiCard,
  MiB,
  newCrew,
  rgwBucketConfig,
  rgwRequests,
  runSync,
} from './peer.js';
import { startRgw, type Rgw } from './rgw.js';

let rgw: Rgw;
let svc: RunningService;
let dir: string;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-peer-clock-');
  rgw = await startRgw({ fakeClock: true });
  svc = await startService({
    dataDir: path.join(dir, 'svc'),
    logger: false,
    externalBucket: rgwBucketConfig(rgw),
  });
});
afterAll(async () => {
  await svc?.close();
  await rgw?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

it.each([20, -20])(
  'the bucket clock %i minutes off the laptop: every file uploads, photos and multipart alike',
  async (minutes) => {
    await rgw.setClockOffset(minutes * 60);
    const crew = await newCrew(svc, `clock ${minutes}`);
    const card = path.join(dir, `card-${minutes}`);
    const files = makeDjiCard(card, 20 * MiB + 77);
    const state = path.join(dir, `state-${minutes}`);
    fs.mkdirSync(state);
    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ partSizeMiB: 5 }));
    const since = rgw.log().length;
    const { code, out, err } = await runSync(svc, crew, state, card).done;
    expect(code, `${out}\n${err}`).toBe(0);
    await expectCardInBucket(rgw, svc, crew, state, files);
    // The only refusals: the first requests of each client, before it learnt the bucket's time.
    const log = rgw.log().slice(since);
    const refused = rgwRequests(log).filter((r) => r.status === 403);
    const skewed = log.match(/err_no=-2012 /g) ?? [];
    console.log(`clock ${minutes} min: ${refused.length} requests refused as skewed, then corrected`);
    expect(refused.length).toBeGreaterThan(0);
    expect(skewed.length).toBe(refused.length);
  },
);
