/**
 * Issue 29: local copies in the field's ordinary events, with the real CLI
 * (`sync --copy-to`) against the real reference service, real files on disk:
 * copies that start and finish with the server unreachable or no sign-in; a
 * destination folder not created yet; a drive that goes away mid-copy; a
 * destination of a past run not named again, then forgotten; two cards
 * synced one after the other from the same folder.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { tempDir, until } from '../support/harness.js';
import { refusingPort } from '../support/refusing-port.js';

const BIN = path.resolve('dist/main/cli/bin.js');
let dir: string;
let svc: RunningService;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-field-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex');

/** Every file under a folder, relative, sorted (the copies' ascmhl/ left out). */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (r !== 'ascmhl') walk(path.join(d, e.name), r);
      } else out.push(r);
    }
  };
  walk(root, '');
  return out.sort();
}

/** A card of `files` videos of `mib` MiB each (random bytes: nothing on a server already has them). */
function videoCard(root: string, files: number, mib: number, flight = 'DJI_202405061015_001_Quarry'): string {
  const folder = path.join(root, 'DCIM', flight);
  fs.mkdirSync(folder, { recursive: true });
  for (let i = 0; i < files; i++)
    fs.writeFileSync(
      path.join(
        folder,
        `DJI_20240506101${String(i).padStart(3, '0')}_${String(i + 1).padStart(4, '0')}_W.MP4`,
      ),
      crypto.randomBytes(mib * 1024 * 1024 + i),
    );
  return root;
}

/** Each file of the card on the destination's card folder, byte-identical. */
function sameAsCard(card: string, copy: string): void {
  expect(tree(copy)).toEqual(tree(card));
  for (const rel of tree(card))
    expect(md5(fs.readFileSync(path.join(copy, rel))), rel).toBe(md5(fs.readFileSync(path.join(card, rel))));
}

/** A loopback port that refuses every connection for the whole file. */
const closedPort = refusingPort;

interface Run {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** `drone-media-sync sync …` as a crew member runs it: a fresh HOME, nothing on stdin; JSON lines as they come. */
function cli(args: string[], env: Record<string, string> = {}, cwd?: string): Run {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { recursive: true });
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  const lines: Array<Record<string, unknown>> = [];
  let [stdout, stderr, partial] = ['', '', ''];
  child.stdout.on('data', (d: Buffer) => {
    stdout += String(d);
    partial += String(d);
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) if (l.startsWith('{')) lines.push(JSON.parse(l) as Record<string, unknown>);
  });
  child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, lines, done };
}

const ofType = (r: Run, type: string) => r.lines.filter((l) => l['type'] === type);

/** Waits for the run to end, killing it (and failing) when it does not within `ms`. */
async function ended(run: Run, ms: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const timer = setTimeout(() => run.child.kill('SIGKILL'), ms);
  const r = await run.done;
  clearTimeout(timer);
  return r;
}

describe('copies need no server and no sign-in', () => {
  it('the server unreachable (a closed port): both drives get the whole card at card speed; only the upload waits', async () => {
    // Many files: the upload lane's first refusals (a closed port answers at once) come while most of
    // the card is still to copy; before issue 29 each backoff of the upload held the copies too.
    const card = videoCard(path.join(dir, 'card-closed'), 40, 0.25);
    const [ssd, t7] = [path.join(dir, 'SSD_CLOSED'), path.join(dir, 'T7_CLOSED')];
    fs.mkdirSync(ssd);
    fs.mkdirSync(t7);
    const state = path.join(dir, 'state-closed');
    const port = await closedPort();
    const run = cli(
      [
        'sync',
        card,
        '--json',
        '--state',
        state,
        '--server',
        `http://127.0.0.1:${port}`,
        '--workspace',
        'w1',
        '--copy-to',
        ssd,
        '--copy-to',
        t7,
      ],
      { DMS_TOKEN: 'x' },
    );
    // The upload's retries back off for minutes; the copies must not wait on them.
    await until('the local verdict', () => ofType(run, 'local-verdict').length > 0, 90_000).catch(
      (err: unknown) => {
        run.child.kill('SIGKILL');
        throw err;
      },
    );
    const local = ofType(run, 'local-verdict')[0] as { safe: boolean; reasons: string[] };
    expect(local.safe, local.reasons.join(' ')).toBe(true);
    for (const d of [ssd, t7]) sameAsCard(card, path.join(d, fs.readdirSync(d)[0]!));
    // The upload keeps trying (backing off) meanwhile: the crew stops it; nothing is lost.
    expect(ofType(run, 'verdict')).toEqual([]);
    run.child.kill('SIGINT');
    const r = await ended(run, 60_000);
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.code).not.toBeNull();
  }, 240_000);

  it('no sign-in: the card is copied and verified, the run says the upload waits for a sign-in (exit 3)', async () => {
    const card = videoCard(path.join(dir, 'card-nosignin'), 4, 1);
    const ssd = path.join(dir, 'SSD_NOSIGNIN');
    fs.mkdirSync(ssd);
    const state = path.join(dir, 'state-nosignin');
    const run = cli([
      'sync',
      card,
      '--state',
      state,
      '--server',
      svc.baseUrl,
      '--workspace',
      svc.workspaceId,
      '--copy-to',
      ssd,
    ]);
    const r = await ended(run, 120_000);
    expect(r.stdout).toMatch(/^card-nosignin: 4 files copied and verified on SSD_NOSIGNIN — safe to format/m);
    sameAsCard(card, path.join(ssd, fs.readdirSync(ssd)[0]!));
    expect(r.stdout + r.stderr).toMatch(/Not signed in to /);
    expect(r.code).toBe(3);
    // Nothing reached the workspace.
    expect(await svc.admin.mediaRecords(svc.workspaceId)).toEqual([]);
  }, 180_000);
});

/** `sync <card> --json --copy-to …` against the reference service, its state in `state-<name>`. */
function syncTo(name: string, card: string, dests: string[], extra: string[] = []): Run {
  const state = path.join(dir, `state-${name}`);
  fs.mkdirSync(state, { recursive: true });
  if (!fs.existsSync(path.join(state, 'config.json')))
    fs.writeFileSync(path.join(state, 'config.json'), '{}');
  return cli(
    [
      'sync',
      card,
      '--json',
      '--state',
      state,
      '--server',
      svc.baseUrl,
      '--workspace',
      svc.workspaceId,
      ...dests.flatMap((d) => ['--copy-to', d]),
      ...extra,
    ],
    { DMS_TOKEN: svc.token },
  );
}

const said = (r: Run) => JSON.stringify(r.lines);

/** One destination stopped with `message`, said once; the copies' verdict not safe, `verdict`, with that one reason. */
function oneStopAlone(run: Run, message: string, verdict: string): void {
  expect(ofType(run, 'destination-stopped')).toEqual([{ type: 'destination-stopped', message }]);
  const local = ofType(run, 'local-verdict').at(-1) as { safe: boolean; message: string; reasons: string[] };
  expect(local.safe).toBe(false);
  expect(local.message).toBe(verdict);
  expect(local.reasons).toEqual([message]);
}

describe('destinations as the crew sees them', () => {
  it('a folder not created yet (--copy-to ~/DroneCopies): created, said once, the card copied and verified there', async () => {
    const card = videoCard(path.join(dir, 'card-new-folder'), 3, 1);
    const home = path.join(dir, 'home-new-folder');
    fs.mkdirSync(home);
    const copies = path.join(home, 'DroneCopies');
    const run = syncTo('new-folder', card, [copies]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(0);
    const created = ofType(run, 'destination');
    expect(created).toEqual([
      {
        type: 'destination',
        state: 'not-created',
        message: `DroneCopies: the folder ${copies} did not exist yet; it was created.`,
      },
    ]);
    expect(ofType(run, 'destination-stopped')).toEqual([]);
    expect(said(run)).not.toMatch(/unplugged|not there any more|did not read back/);
    const local = ofType(run, 'local-verdict')[0] as { safe: boolean; message: string; reasons: string[] };
    expect(local.safe, local.reasons.join(' ')).toBe(true);
    expect(local.message).toBe(
      'card-new-folder: 3 files copied and verified on DroneCopies — safe to format',
    );
    sameAsCard(card, path.join(copies, fs.readdirSync(copies)[0]!));
  }, 180_000);

  it('the settings name ~/DroneCopies (the README\'s path, where no shell expands it): the home folder, never a folder named "~"; a relative path is refused before anything is read', async () => {
    const card = videoCard(path.join(dir, 'card-tilde'), 2, 1);
    const home = path.join(dir, 'home-tilde');
    const cwd = path.join(dir, 'cwd-tilde');
    const state = path.join(dir, 'state-tilde');
    for (const d of [home, cwd, state]) fs.mkdirSync(d);
    const settings = (destination: string) =>
      fs.writeFileSync(
        path.join(state, 'config.json'),
        JSON.stringify({ destinations: [{ path: destination }] }),
      );
    const sync = () =>
      cli(
        ['sync', card, '--json', '--state', state, '--server', svc.baseUrl, '--workspace', svc.workspaceId],
        { DMS_TOKEN: svc.token, HOME: home },
        cwd,
      );

    settings('~/DroneCopies');
    const run = sync();
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(0);
    const copies = path.join(home, 'DroneCopies');
    expect(ofType(run, 'destination')).toEqual([
      {
        type: 'destination',
        state: 'not-created',
        message: `DroneCopies: the folder ${copies} did not exist yet; it was created.`,
      },
    ]);
    expect(said(run)).not.toMatch(/unplugged|not plugged in/);
    expect(fs.readdirSync(cwd), 'no folder named "~" where the command ran').toEqual([]);
    sameAsCard(card, path.join(copies, fs.readdirSync(copies)[0]!));

    settings('DroneCopies');
    const refused = sync();
    const r2 = await ended(refused, 60_000);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain(
      `The settings in ${path.join(state, 'config.json')} are not valid: destinations.0.path must be a full path, like ~/DroneCopies or /media/pilot/T7_BACKUP (a relative one would depend on the folder the app is started in). Fix them in that file, then run again.`,
    );
    expect(refused.lines).toEqual([]);
    expect(fs.readdirSync(cwd)).toEqual([]);
  }, 180_000);

  it('the folder of the settings named again by --copy-to (with a trailing slash): one destination, one copy, the upload goes on', async () => {
    const card = videoCard(path.join(dir, 'card-twice'), 2, 1);
    const ssd = path.join(dir, 'SSD_TWICE');
    const state = path.join(dir, 'state-twice');
    fs.mkdirSync(state, { recursive: true });
    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ destinations: [{ path: ssd }] }));
    const run = syncTo('twice', card, [`${ssd}/`]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(0);
    expect(said(run)).not.toMatch(/server had a problem|cannot go from/);
    expect((ofType(run, 'local-verdict').at(-1) as { message: string }).message).toBe(
      'card-twice: 2 files copied and verified on SSD_TWICE — safe to format',
    );
    expect(ofType(run, 'summary')[0]).toMatchObject({ uploaded: 2, failed: 0, pending: 0 });
    sameAsCard(card, path.join(ssd, fs.readdirSync(ssd)[0]!));
  }, 180_000);

  it("a sync naming no destination after one that did: the earlier copies are said, never this run's shortfall (exit 0); what they lack waits for a sync that names them", async () => {
    const card = videoCard(path.join(dir, 'card-unnamed'), 2, 1);
    const ssd = path.join(dir, 'SSD_UNNAMED');
    const first = syncTo('unnamed', card, [ssd]);
    expect((await ended(first, 120_000)).code).toBe(0);
    // The crew deletes the copies (or the drive was wiped), then syncs the card without --copy-to.
    fs.rmSync(path.join(ssd, fs.readdirSync(ssd)[0]!), { recursive: true });
    const second = syncTo('unnamed', card, []);
    const r = await ended(second, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(0);
    const local = (ofType(second, 'verdict').at(-1) as { local: { safe: boolean; reasons: string[] } }).local;
    expect(local.safe).toBe(false);
    expect(local.reasons).toEqual([
      'SSD_UNNAMED: 2 copies changed or removed since they were verified (DJI_20240506101000_0001_W.MP4 and DJI_20240506101001_0002_W.MP4): sync the card with SSD_UNNAMED named (--copy-to, or in the settings) to copy them anew.',
    ]);
    expect(said(second)).not.toMatch(/wait until they are copied/);
    expect(fs.readdirSync(ssd), 'nothing copied by a run that names no destination').toEqual([]);
  }, 180_000);

  it('a drive not plugged in where drives are mounted (the README\'s --copy-to /media/pilot/T7_BACKUP): "not plugged in", nothing written on the laptop under its name; plugged in, it gets the card', async () => {
    const card = videoCard(path.join(dir, 'card-mountroot'), 2, 1);
    const media = path.join(dir, 'media-pilot');
    fs.mkdirSync(media);
    const t7 = path.join(media, 'T7_BACKUP');
    const ssd = path.join(dir, 'SSD_MOUNTROOT');
    const state = path.join(dir, 'state-mountroot');
    fs.mkdirSync(state, { recursive: true });
    // The settings' card roots are where drives are mounted, beside the system's own (/media/<user>...).
    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ mountRoots: [media] }));
    const unplugged = `T7_BACKUP: its drive is not plugged in (${t7} is not there): its copy of this card stopped. Plug it in, then sync again; the other copies go on.`;
    const verdict =
      'card-mountroot: not safe to format from the copies yet — T7_BACKUP stopped after 0 of 2; SSD_MOUNTROOT 2 of 2 verified';

    const run = syncTo('mountroot', card, [t7, ssd]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(4);
    oneStopAlone(run, unplugged, verdict);
    expect(fs.readdirSync(media), 'no T7_BACKUP folder made on the laptop').toEqual([]);

    // A bare folder left where the drive was mounted (unplugged without unmounting): the same.
    fs.mkdirSync(t7);
    const again = syncTo('mountroot', card, [t7, ssd]);
    expect((await ended(again, 120_000)).code).toBe(4);
    expect(ofType(again, 'destination-stopped')).toEqual([
      { type: 'destination-stopped', message: unplugged },
    ]);
    expect((ofType(again, 'verdict').at(-1) as { local: { message: string } }).local.message).toBe(verdict);
    expect(fs.readdirSync(t7)).toEqual([]);

    if (process.getuid?.() !== 0 || !spawnSyncOk('mount', ['-t', 'tmpfs', '-o', 'size=200m', 'tmpfs', t7]))
      return;
    try {
      const plugged = syncTo('mountroot', card, [t7, ssd]);
      const r3 = await ended(plugged, 120_000);
      expect(r3.code, r3.stdout.slice(-2000) + r3.stderr).toBe(0);
      expect((ofType(plugged, 'local-verdict').at(-1) as { message: string }).message).toBe(
        'card-mountroot: 2 files copied and verified on T7_BACKUP and SSD_MOUNTROOT — safe to format',
      );
      sameAsCard(card, path.join(t7, fs.readdirSync(t7)[0]!));
    } finally {
      spawnSyncOk('umount', ['-l', t7]);
    }
  }, 240_000);

  it('the same folder name on two drives (DroneCopies on each): each said with its drive, never two "DroneCopies"', async () => {
    const card = videoCard(path.join(dir, 'card-samename'), 2, 1);
    const [t7, ssd] = ['T7_SAMENAME', 'SSD_SAMENAME'].map((n) => path.join(dir, n, 'DroneCopies'));
    fs.mkdirSync(path.dirname(t7!));
    fs.mkdirSync(path.dirname(ssd!));
    fs.writeFileSync(t7!, 'a file where the folder should be');
    const run = syncTo('samename', card, [t7!, ssd!]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(4);
    const local = ofType(run, 'local-verdict').at(-1) as { message: string };
    expect(local.message).toBe(
      'card-samename: not safe to format from the copies yet — DroneCopies (T7_SAMENAME) is a file, not a folder; DroneCopies (SSD_SAMENAME) 2 of 2 verified',
    );
  }, 180_000);

  it('one folder of a card synced (sync CARD/DCIM/<flight>): its files go and its copies are made (exit 0), but no verdict says "safe to format": the card holds more', async () => {
    const card = videoCard(path.join(dir, 'card-part'), 2, 1);
    videoCard(card, 1, 1, 'DJI_202405061115_002_Quarry');
    const flight = 'DJI_202405061015_001_Quarry';
    const ssd = path.join(dir, 'SSD_PART');
    const run = syncTo('part', path.join(card, 'DCIM', flight), [ssd]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(0);
    const why = `${flight} is one folder of the card card-part (${card}): the card's other files were not read. Sync the card itself (${card}) before formatting it.`;
    expect(ofType(run, 'skipped')).toEqual([{ type: 'skipped', path: card, reason: why }]);
    const local = ofType(run, 'local-verdict').at(-1) as {
      safe: boolean;
      message: string;
      reasons: string[];
    };
    expect(local).toMatchObject({
      safe: false,
      message: `${flight}: not safe to format from the copies yet — the rest of the card not read; SSD_PART 2 of 2 verified`,
      reasons: [why],
    });
    const verdict = ofType(run, 'verdict').at(-1) as {
      safe: boolean;
      message: string;
      workspace: { safe: boolean; message: string };
      reasons: string[];
    };
    expect(verdict.safe).toBe(false);
    expect(verdict.workspace.message).toBe(
      `${flight}: not safe to format yet — the rest of the card not read`,
    );
    expect(verdict.reasons).toEqual([why]);
    expect(said(run)).not.toMatch(/— safe to format/);
    const summary = ofType(run, 'summary')[0]!;
    expect(summary).toMatchObject({ uploaded: 2, failed: 0 });

    // The card itself: read whole (its folder's files done already), safe to format.
    const whole = syncTo('part', card, [ssd]);
    const r2 = await ended(whole, 120_000);
    expect(r2.code, r2.stdout.slice(-2000) + r2.stderr).toBe(0);
    expect(ofType(whole, 'skipped')).toEqual([]);
    expect((ofType(whole, 'local-verdict').at(-1) as { message: string }).message).toBe(
      'card-part: 3 files copied and verified on SSD_PART — safe to format',
    );
  }, 180_000);

  it.skipIf(process.getuid?.() !== 0 || spawnSyncOk('mount', ['--version']) === false)(
    'a drive unplugged mid-copy (its volume unmounted): "not plugged in" with its own count, never "did not read back"; nothing written on the laptop in its place',
    async () => {
      const card = videoCard(path.join(dir, 'card-unmounted'), 24, 1);
      const ssd = path.join(dir, 'SSD_UNMOUNT');
      const t7 = path.join(dir, 'T7_UNMOUNT');
      fs.mkdirSync(ssd);
      fs.mkdirSync(t7);
      expect(spawnSyncOk('mount', ['-t', 'tmpfs', '-o', 'size=200m', 'tmpfs', t7])).toBe(true);
      let mounted = true;
      try {
        const run = syncTo('unmounted', card, [ssd, t7]);
        const copyOnT7 = () => {
          const [folder] = fs.readdirSync(t7);
          return folder ? tree(path.join(t7, folder)).length : 0;
        };
        await until('the first copies on T7', () => copyOnT7() >= 2, 60_000);
        // The drive is pulled: its volume goes away, its mount point stays as a bare folder of the laptop.
        expect(spawnSyncOk('umount', ['-l', t7])).toBe(true);
        mounted = false;
        const r = await ended(run, 120_000);
        expect(fs.readdirSync(t7), 'nothing written on the laptop in the drive’s place').toEqual([]);
        const stopped = ofType(run, 'destination-stopped').map((l) => String(l['message']));
        expect(stopped).toEqual([expect.stringMatching(/^T7_UNMOUNT: its drive is not plugged in/)]);
        const local = ofType(run, 'local-verdict').at(-1) as {
          safe: boolean;
          message: string;
          reasons: string[];
        };
        expect(local.safe).toBe(false);
        expect(local.message).toMatch(
          /^card-unmounted: not safe to format from the copies yet — SSD_UNMOUNT 24 of 24 verified; T7_UNMOUNT unplugged after \d+ of 24$/,
        );
        expect(said(run)).not.toMatch(/did not read back/);
        sameAsCard(card, path.join(ssd, fs.readdirSync(ssd)[0]!));
        // The run asked for a copy that was not made: not "all done".
        expect(r.code).not.toBeNull();
      } finally {
        if (mounted) spawnSyncOk('umount', ['-l', t7]);
      }
    },
  );

  it('a destination that is a file (a path mistyped): "a file, not a folder", never "unplugged"; the other drive gets the card; exit 4', async () => {
    const card = videoCard(path.join(dir, 'card-afile'), 2, 1);
    const ssd = path.join(dir, 'SSD_AFILE');
    const notes = path.join(dir, 'NOTES.txt');
    fs.writeFileSync(notes, 'the crew notes of the day');
    const run = syncTo('afile', card, [notes, ssd]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(4);
    oneStopAlone(
      run,
      `NOTES.txt: ${notes} is a file, not a folder: its copy of this card stopped, nothing was written there. Choose a folder for the copies (or move that file away), then sync again; the other copies go on.`,
      'card-afile: not safe to format from the copies yet — NOTES.txt is a file, not a folder; SSD_AFILE 2 of 2 verified',
    );
    expect(said(run)).not.toMatch(/unplugged|not plugged in|did not read back/);
    expect(fs.readFileSync(notes, 'utf8')).toBe('the crew notes of the day');
    sameAsCard(card, path.join(ssd, fs.readdirSync(ssd)[0]!));
  }, 180_000);

  it('a destination of a past run not named again stops counting; a destination forgotten no longer counts', async () => {
    const card = videoCard(path.join(dir, 'card-past'), 2, 1);
    const [ssd, t7, small] = ['SSD_PAST', 'T7_PAST', 'SMALL_PAST'].map((n) => path.join(dir, n));
    for (const d of [ssd, t7, small]) fs.mkdirSync(d!);
    const first = syncTo('past', card, [ssd!, t7!]);
    expect((await ended(first, 120_000)).code).toBe(0);
    expect((ofType(first, 'local-verdict')[0] as { message: string }).message).toBe(
      'card-past: 2 files copied and verified on SSD_PAST and T7_PAST — safe to format',
    );
    // The next run names SSD and SMALL only: T7 is not one of this card's destinations any more.
    const second = syncTo('past', card, [ssd!, small!]);
    expect((await ended(second, 120_000)).code).toBe(0);
    expect((ofType(second, 'local-verdict').at(-1) as { message: string }).message).toBe(
      'card-past: 2 files copied and verified on SSD_PAST and SMALL_PAST — safe to format',
    );
    // SMALL is forgotten: `status` no longer names it; its files are not touched.
    const state = path.join(dir, 'state-past');
    const forget = cli(['copies', 'forget', small!, '--state', state]);
    const f = await ended(forget, 60_000);
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).toMatch(/^Forgot SMALL_PAST \(.*\): it no longer counts for any card/m);
    expect(tree(path.join(small!, fs.readdirSync(small!)[0]!))).toEqual(tree(card));
    const status = await ended(cli(['status', '--state', state]), 60_000);
    expect(status.stdout).toMatch(
      /^ {2}Local copies: 2 files copied and verified on SSD_PAST — safe to format$/m,
    );
    expect(status.stdout).not.toMatch(/SMALL_PAST|T7_PAST/);
    // Forgetting a folder never used is refused by name.
    const unknown = await ended(cli(['copies', 'forget', path.join(dir, 'NEVER'), '--state', state]), 60_000);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/No copies were ever made to .*NEVER: nothing to forget/);
  }, 300_000);
});

function spawnSyncOk(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args).status === 0;
}

describe('a card is known by the card, not by where it is mounted', () => {
  it('two different cards synced one after the other from the same folder are two cards; the first again elsewhere is recognised', async () => {
    const slot = path.join(dir, 'SLOT');
    const ssd = path.join(dir, 'SSD_SLOT');
    fs.mkdirSync(ssd);
    const first = videoCard(slot, 2, 1, 'DJI_202405061015_001_Quarry');
    const firstFiles = new Map(tree(first).map((rel) => [rel, fs.readFileSync(path.join(first, rel))]));
    const one = syncTo('slot', slot, [ssd]);
    const r1 = await ended(one, 120_000);
    expect(r1.code, r1.stdout.slice(-2000) + r1.stderr).toBe(0);
    // The pilot swaps cards in the same reader slot: another card, mounted at the same place.
    fs.rmSync(slot, { recursive: true });
    const second = videoCard(slot, 3, 1, 'DJI_202405071130_002_Bridge');
    const two = syncTo('slot', slot, [ssd]);
    const r2 = await ended(two, 120_000);
    expect(r2.code, r2.stdout.slice(-2000) + r2.stderr).toBe(0);
    expect(said(two)).not.toMatch(/already holds another object|changed or removed since/);
    const local = ofType(two, 'local-verdict').at(-1) as { safe: boolean; message: string };
    expect(local.message).toBe('SLOT: 3 files copied and verified on SSD_SLOT — safe to format');
    const verdict = ofType(two, 'verdict').at(-1) as { safe: boolean; message: string; reasons: string[] };
    expect(verdict.safe, verdict.reasons.join(' ')).toBe(true);
    expect(verdict.message).toMatch(/^SLOT: 3 files verified in workspace /);
    // Each card its own copy folder on the drive, each byte-identical with its card.
    const folders = fs.readdirSync(ssd).sort();
    expect(folders).toHaveLength(2);
    const trees = folders.map((f) => tree(path.join(ssd, f)));
    expect(trees).toContainEqual(tree(second));
    expect(trees).toContainEqual([...firstFiles.keys()].sort());
    // Each its own ASC MHL chain: one generation in each.
    for (const f of folders)
      expect(fs.readdirSync(path.join(ssd, f, 'ascmhl')).filter((x) => x.endsWith('.mhl'))).toHaveLength(1);
    // The first card again, now in another folder: recognised, nothing copied or uploaded again.
    const elsewhere = path.join(dir, 'READER2');
    for (const [rel, bytes] of firstFiles) {
      fs.mkdirSync(path.dirname(path.join(elsewhere, rel)), { recursive: true });
      fs.writeFileSync(path.join(elsewhere, rel), bytes);
    }
    // Same times as on the card (a card keeps its files' times wherever it is read).
    const copyOfFirst = path.join(
      ssd,
      folders.find((f) => tree(path.join(ssd, f)).length === 2)!,
    );
    for (const rel of firstFiles.keys()) {
      const st = fs.statSync(path.join(copyOfFirst, rel));
      fs.utimesSync(path.join(elsewhere, rel), st.atime, st.mtime);
    }
    const three = syncTo('slot', elsewhere, [ssd]);
    const r3 = await ended(three, 120_000);
    expect(r3.code, r3.stdout.slice(-2000) + r3.stderr).toBe(0);
    const summary = ofType(three, 'summary')[0] as { uploaded: number; skipped: number; copied: unknown[] };
    expect(summary.uploaded).toBe(0);
    expect(summary.skipped).toBe(2);
    expect(summary.copied).toEqual([]);
    expect(fs.readdirSync(ssd)).toHaveLength(2);
  }, 300_000);
});

describe("a folder that holds the agent's own folders", () => {
  // Found by hand (session 13): `sync` of a home folder took the agent's own queue.db, its -wal file
  // and its lock files as files to upload; the copies' folder inside it would be read as new files.
  it('`sync ~` after `sync ~/Flights --copy-to ~/DroneCopies`: its state, its cache and its copies are never read; copies into the folder copied are refused', async () => {
    const home = path.join(dir, 'home-own');
    videoCard(path.join(home, 'Flights'), 2, 1);
    const copies = path.join(home, 'DroneCopies');
    const run = (root: string, extra: string[] = []): Run =>
      cli(['sync', root, '--json', '--server', svc.baseUrl, '--workspace', svc.workspaceId, ...extra], {
        HOME: home,
        DMS_TOKEN: svc.token,
      });
    const first = run(path.join(home, 'Flights'), ['--copy-to', copies]);
    const r1 = await ended(first, 120_000);
    expect(r1.code, r1.stdout.slice(-2000) + r1.stderr).toBe(0);
    // The default state folder (~/.config/drone-media-sync) is there now, with the queue in it.
    expect(fs.existsSync(path.join(home, '.config', 'drone-media-sync', 'queue.db'))).toBe(true);
    expect((ofType(first, 'summary')[0] as { uploaded: number }).uploaded).toBe(2);

    // The whole home: the flights only. The queue, Node's cache of the compiled code (400-odd files)
    // and the copies of the first run are the agent's own, named, never read.
    const second = run(home);
    const r2 = await ended(second, 120_000);
    expect(r2.code, r2.stdout.slice(-2000) + r2.stderr).toBe(0);
    const own = ofType(second, 'skipped').map((l) => String(l['reason']));
    expect(own).toEqual([
      ".cache/drone-media-sync/compile-cache is Drone Media Sync's own folder (its compiled code): not read.",
      ".config/drone-media-sync is Drone Media Sync's own folder (its queue and settings): not read.",
      "DroneCopies is Drone Media Sync's own folder (the local copies of cards, DroneCopies): not read.",
    ]);
    expect(ofType(second, 'file').map((l) => path.relative(home, String(l['path'])))).toEqual([
      expect.stringMatching(/^Flights\/DCIM\//),
      expect.stringMatching(/^Flights\/DCIM\//),
    ]);
    expect((ofType(second, 'summary')[0] as { uploaded: number }).uploaded).toBe(0);
    const names = (await svc.admin.mediaRecords(svc.workspaceId)).map((r) => r.name);
    expect(names.filter((n) => /queue\.db|\.lock|-wal|\.mhl/.test(n))).toEqual([]);

    // Copies asked into the very folder copied: deleting it would erase them, so they are no copies.
    const third = run(home, ['--copy-to', copies]);
    const r3 = await ended(third, 120_000);
    expect(r3.code).toBe(4);
    expect(ofType(third, 'destination-stopped')).toEqual([
      {
        type: 'destination-stopped',
        message: `DroneCopies: ${copies} is inside the folder it copies (${home}): deleting that folder would erase it, so it holds no copy. Its copy stopped; choose a folder on another drive, then sync again; the other copies go on.`,
      },
    ]);
    expect(fs.readdirSync(copies)).toHaveLength(1); // the first run's card folder, nothing more
  }, 300_000);

  it('`--copy-to` a folder on the card itself: refused, nothing written on the card, "not safe" from the copies; the other drive gets the card', async () => {
    const card = videoCard(path.join(dir, 'CARD_SELF'), 2, 1);
    const onCard = path.join(card, 'backup');
    const ssd = path.join(dir, 'SSD_SELF');
    const run = syncTo('self', card, [onCard, ssd]);
    const r = await ended(run, 120_000);
    expect(r.code, r.stdout.slice(-2000) + r.stderr).toBe(4);
    oneStopAlone(
      run,
      `backup: ${onCard} is on the card itself (inside ${card}): formatting the card would erase it, so it holds no copy. Its copy stopped; choose a folder on another drive, then sync again; the other copies go on.`,
      'CARD_SELF: not safe to format from the copies yet — backup stopped after 0 of 2; SSD_SELF 2 of 2 verified',
    );
    expect(fs.existsSync(onCard), 'nothing made on the card').toBe(false);
    sameAsCard(card, path.join(ssd, fs.readdirSync(ssd)[0]!));
  }, 180_000);
});
