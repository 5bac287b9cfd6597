import { createHook } from 'node:async_hooks';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import type * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DiscoveredFile, DiscoverOptions, DiscoverWarning } from './discover.js';
import { discoverFiles } from './discover.js';

// Running as root (CI containers) no permission stops a read, so an unreadable
// folder is simulated: reading any folder named LOCKED fails like EACCES.
// access() is the real one, counted (the files whose mode said nothing).
const accessed: string[] = [];
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof fsp>();
  return {
    ...real,
    access: (path: string, mode?: number) => {
      accessed.push(path);
      return real.access(path, mode);
    },
    readdir: (path: string, ...rest: [{ withFileTypes: true }]) => {
      if (basename(path) === 'LOCKED') {
        return Promise.reject(
          Object.assign(new Error(`EACCES: permission denied, scandir '${path}'`), { code: 'EACCES' }),
        );
      }
      return real.readdir(path, ...rest);
    },
  };
});

const FLIGHT = 'DCIM/DJI_202208311455_008_Waypoint1';
/** The files that must be found, in the order they must come (sorted by name, depth first). */
const EXPECTED = [
  'DCIM/100MEDIA/DJI_0001.JPG',
  'DCIM/100MEDIA/DJI_0002.DNG',
  'DCIM/100MEDIA/DJI_0003.MOV',
  'DCIM/100MEDIA/DJI_0004.tiff',
  `${FLIGHT}/DJI_20220831151616_0004_W.JPG`,
  `${FLIGHT}/DJI_20220831151617_0005_T.JPG`,
  `${FLIGHT}/DJI_20220831151700_0006_W.MP4`,
  `${FLIGHT}/DJI_20220831151800_0007_W.jpg`,
  'DCIM/PANORAMA/100_0001/DJI_0001.JPG',
  'DCIM/link-inside.JPG',
];
/** Present on the card, never media: kept as files (copied, stored beside their flight), or named (system files). */
const NOISE = [
  `${FLIGHT}/DJI_20220831151700_0006_W.SRT`,
  `${FLIGHT}/DJI_20220831151700_0006_W.LRF`,
  `${FLIGHT}/._DJI_20220831151616_0004_W.JPG`, // macOS resource fork
  'DCIM/100MEDIA/DJI_0001.THM',
  'DCIM/100MEDIA/DJI_0001.SCR',
  'DCIM/Misc/a.JPG', // MISC is matched case-insensitively
  'MISC/THUMBNAIL/DJI_0001.JPG',
  '.Spotlight-V100/x.JPG',
  'DCIM/LOCKED/DJI_9999.JPG',
  'notes.txt',
];

let tmp: string;
let card: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'dms-disc-'));
  card = join(tmp, 'card');
  // Created in reverse order, so a sorted result is our doing, not the file system's.
  for (const rel of [...EXPECTED, ...NOISE].reverse()) {
    if (rel === 'DCIM/link-inside.JPG') continue;
    await mkdir(dirname(join(card, rel)), { recursive: true });
    await writeFile(join(card, rel), `content of ${rel}`);
  }
  await writeFile(join(card, `${FLIGHT}/DJI_20220831151801_0008_W.JPG`), ''); // zero bytes: cut short
  await writeFile(join(tmp, 'outside.JPG'), 'a real file outside the card');
  // Links out of the card (a file, a folder) are never followed; a link within it is.
  await symlink(join(tmp, 'outside.JPG'), join(card, 'DCIM/link-to-outside.JPG'));
  await mkdir(join(tmp, 'home/.ssh'), { recursive: true });
  await writeFile(join(tmp, 'home/.ssh/id_ed25519'), 'PRIVATE KEY');
  await symlink(join(tmp, 'home/.ssh/id_ed25519'), join(card, 'DCIM/100MEDIA/DJI_0777.JPG'));
  await symlink(join(tmp, 'home'), join(card, 'DCIM/HOME'));
  await symlink(join(card, 'DCIM/100MEDIA/DJI_0001.JPG'), join(card, 'DCIM/link-inside.JPG'));
  await symlink(card, join(card, 'DCIM/zz-loop')); // a loop back to the root
  await symlink(join(tmp, 'gone'), join(card, 'DCIM/zz-broken')); // dangling link
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The media files found (what a callback is posted for). */
async function collect(roots: string[], opts: DiscoverOptions = {}): Promise<DiscoveredFile[]> {
  return (await everything(roots, opts)).filter((f) => f.kind === 'media');
}

async function everything(roots: string[], opts: DiscoverOptions = {}): Promise<DiscoveredFile[]> {
  const out: DiscoveredFile[] = [];
  for await (const f of discoverFiles(roots, opts)) out.push(f);
  return out;
}

describe('discoverFiles', () => {
  it('finds exactly the media files of a DJI-like card, sorted, and reports what it skipped', async () => {
    const warnings: DiscoverWarning[] = [];
    const files = await collect([card], { onWarning: (w) => warnings.push(w) });
    expect(files.map((f) => f.relPath)).toEqual(EXPECTED);

    const first = files[0]!;
    expect(first.path).toBe(join(card, 'DCIM/100MEDIA/DJI_0001.JPG'));
    expect(first.root).toBe(card);
    expect(first.size).toBe(Buffer.byteLength('content of DCIM/100MEDIA/DJI_0001.JPG'));
    expect(first.mtimeMs).toBeGreaterThan(0);

    const warned = warnings.map((w) => `${w.kind} ${basename(w.path)}`).sort();
    expect(warned).toEqual([
      'broken-link zz-broken',
      'loop zz-loop',
      'outside-root DJI_0777.JPG',
      'outside-root HOME',
      'outside-root link-to-outside.JPG',
      'system .Spotlight-V100',
      'system ._DJI_20220831151616_0004_W.JPG',
      'unreadable LOCKED',
    ]);
    // Only what holds card content nobody kept stops "safe to format".
    expect(warnings.filter((w) => w.blocking).map((w) => basename(w.path))).toEqual(['LOCKED']);
    expect(warnings.find((w) => w.relPath === 'DCIM/100MEDIA/DJI_0777.JPG')?.message).toMatch(
      /link to .*id_ed25519.*skipped/,
    );
    expect(warnings.find((w) => basename(w.path) === 'LOCKED')?.message).toMatch(/EACCES/);
  });

  it('keeps every other file of the card as a file of its own kind (SRT, LRF, MISC, anything)', async () => {
    const others = (await everything([card])).filter((f) => f.kind === 'other').map((f) => f.relPath);
    expect(others.sort()).toEqual(
      [
        `${FLIGHT}/DJI_20220831151700_0006_W.SRT`,
        `${FLIGHT}/DJI_20220831151700_0006_W.LRF`,
        // Empty: a write cut short. Kept as a file (it is on the card), never posted as a photo.
        `${FLIGHT}/DJI_20220831151801_0008_W.JPG`,
        'DCIM/100MEDIA/DJI_0001.THM',
        'DCIM/100MEDIA/DJI_0001.SCR',
        'DCIM/Misc/a.JPG',
        'MISC/THUMBNAIL/DJI_0001.JPG',
        'notes.txt',
      ].sort(),
    );
  });

  it('asks access() only for a file whose mode does not say it may be read (issue 33: one per file)', async () => {
    const root = join(tmp, 'modes');
    await mkdir(root);
    for (let i = 0; i < 5; i++) await writeFile(join(root, `DJI_000${i}.JPG`), 'x');
    await chmod(join(root, 'DJI_0003.JPG'), 0o000);
    accessed.length = 0;
    const found = await collect([root]);
    expect(accessed).toEqual(
      process.platform === 'win32' ? found.map((f) => f.path) : [join(root, 'DJI_0003.JPG')],
    );
    // Read by the one who may (root here, whom modes do not stop): still found; a crew's
    // account is told it cannot read it (test/cli/unreadable.test.ts).
    if (process.getuid?.() === 0) expect(found).toHaveLength(5);
    await chmod(join(root, 'DJI_0003.JPG'), 0o644);
  });

  it('gives the same order on every run', async () => {
    const a = (await collect([card])).map((f) => f.relPath);
    const b = (await collect([card])).map((f) => f.relPath);
    expect(b).toEqual(a);
  });

  it('include narrows the media extensions but never makes side-car files media', async () => {
    const videos = await collect([card], { include: ['.mp4', 'MOV'] });
    expect(videos.map((f) => f.relPath)).toEqual([
      'DCIM/100MEDIA/DJI_0003.MOV',
      `${FLIGHT}/DJI_20220831151700_0006_W.MP4`,
    ]);
    expect(await collect([card], { include: ['srt', 'LRF', '*.thm', 'scr'] })).toEqual([]);
  });

  it('exclude by folder name, by path glob and by name glob: not kept, and named', async () => {
    const rel = async (exclude: string[]): Promise<string[]> =>
      (await collect([card], { exclude })).map((f) => f.relPath);
    const warnings: DiscoverWarning[] = [];
    await everything([card], { exclude: ['*.LRF'], onWarning: (w) => warnings.push(w) });
    expect(warnings.filter((w) => w.kind === 'excluded').map((w) => w.message)).toEqual([
      `${FLIGHT}/DJI_20220831151700_0006_W.LRF: excluded in the settings: not kept.`,
    ]);
    expect(await rel(['panorama'])).toEqual(EXPECTED.filter((p) => !p.includes('PANORAMA')));
    expect(await rel(['DCIM/100MEDIA'])).toEqual(EXPECTED.filter((p) => !p.includes('100MEDIA')));
    expect(await rel(['**/*_T.JPG'])).toEqual(EXPECTED.filter((p) => !p.endsWith('_T.JPG')));
    expect(await rel(['*.jpg'])).toEqual(EXPECTED.filter((p) => !/\.jpg$/i.test(p)));
  });

  it("the agent's own folders under a root are not read, and named; the root itself, or one not there, changes nothing", async () => {
    const warnings: DiscoverWarning[] = [];
    const own = [
      { path: join(card, 'DCIM/100MEDIA'), what: 'the local copies of cards, T7' },
      { path: join(card, 'DCIM/NOT-THERE'), what: 'its queue and settings' },
      { path: join(card, 'DCIM/HOME'), what: 'a link, by its own path' }, // a link out: named as one
    ];
    const files = await everything([card], { own, onWarning: (w) => warnings.push(w) });
    expect(files.filter((f) => f.kind === 'media').map((f) => f.relPath)).toEqual(
      EXPECTED.filter((p) => !p.startsWith('DCIM/100MEDIA/')),
    );
    expect(warnings.filter((w) => w.kind === 'own')).toEqual([
      {
        path: join(card, 'DCIM/100MEDIA'),
        relPath: 'DCIM/100MEDIA',
        kind: 'own',
        message: "DCIM/100MEDIA is Drone Media Sync's own folder (the local copies of cards, T7): not read.",
        blocking: false,
      },
    ]);
    // A root that is an own folder is read: `sync ~/DroneCopies/CARD` is the crew's choice.
    const inside = await collect([join(card, 'DCIM/100MEDIA')], {
      own: [
        { path: join(card, 'DCIM/100MEDIA'), what: 'x' },
        { path: card, what: 'y' },
      ],
    });
    expect(inside.map((f) => f.relPath)).toEqual([
      'DJI_0001.JPG',
      'DJI_0002.DNG',
      'DJI_0003.MOV',
      'DJI_0004.tiff',
    ]);
  });

  it('walks several roots in the order given', async () => {
    const flight = join(card, FLIGHT);
    const files = await collect([flight, join(card, 'DCIM/100MEDIA')]);
    expect(files.map((f) => `${basename(f.root)}:${f.relPath}`)).toEqual([
      'DJI_202208311455_008_Waypoint1:DJI_20220831151616_0004_W.JPG',
      'DJI_202208311455_008_Waypoint1:DJI_20220831151617_0005_T.JPG',
      'DJI_202208311455_008_Waypoint1:DJI_20220831151700_0006_W.MP4',
      'DJI_202208311455_008_Waypoint1:DJI_20220831151800_0007_W.jpg',
      '100MEDIA:DJI_0001.JPG',
      '100MEDIA:DJI_0002.DNG',
      '100MEDIA:DJI_0003.MOV',
      '100MEDIA:DJI_0004.tiff',
    ]);
  });

  it('a missing root is source-missing before anything is yielded', async () => {
    const seen: string[] = [];
    const run = async (): Promise<void> => {
      for await (const f of discoverFiles([card, join(tmp, 'no-card')])) seen.push(f.relPath);
    };
    await expect(run()).rejects.toMatchObject({ name: 'DmsError', kind: 'source-missing' });
    expect(seen).toEqual([]);
  });

  it('a root that is a file is invalid-input', async () => {
    await expect(collect([join(tmp, 'outside.JPG')])).rejects.toMatchObject({ kind: 'invalid-input' });
  });

  it('stops with cancelled when aborted', async () => {
    const ac = new AbortController();
    const seen: string[] = [];
    const run = async (): Promise<void> => {
      for await (const f of discoverFiles([card], { signal: ac.signal })) {
        seen.push(f.relPath);
        if (seen.length === 2) ac.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ kind: 'cancelled' });
    expect(seen).toEqual((await everything([card])).slice(0, 2).map((f) => f.relPath));
  });

  it('a large card: every file in order, one thread-pool round trip per folder, not per file', async () => {
    // Issue 33: a re-inserted card of 10,000 files was 10,000 stat round trips and promises.
    const root = join(tmp, 'large');
    const names = (n: number, ext: string) =>
      Array.from({ length: n }, (_, i) => `DJI_${String(i + 1).padStart(4, '0')}.${ext}`);
    const layout: Array<[string, string[]]> = [
      ['DCIM/DJI_001_Survey', [...names(700, 'JPG'), ...names(3, 'jpg'), 'DJI_0001.SRT']],
      ['DCIM/DJI_002_Survey', names(300, 'JPG')],
      ['MISC/THUMBNAIL', names(20, 'JPG')],
    ];
    for (const [dir, files] of [...layout].reverse()) {
      await mkdir(join(root, dir), { recursive: true });
      for (const f of [...files].reverse()) await writeFile(join(root, dir, f), 'x');
    }
    const expected = layout.flatMap(([dir, files]) =>
      [...files]
        .sort()
        .map((f) => `${dir}/${f}:${dir.startsWith('MISC') || f.endsWith('.SRT') ? 'other' : 'media'}`),
    );
    let requests = 0;
    const hook = createHook({
      init: (_id, type) => {
        if (type.startsWith('FSREQ')) requests++;
      },
    }).enable();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    let found: DiscoveredFile[];
    try {
      found = await everything([root]);
    } finally {
      hook.disable();
      clearInterval(timer);
    }
    expect(found.map((f) => `${f.relPath}:${f.kind}`)).toEqual(expected);
    expect(found.every((f) => f.size === 1 && f.mtimeMs > 0)).toBe(true);
    // Before: 1,024 stats (and the folders' reads); now a few per folder.
    expect(requests).toBeLessThan(30);
    // The event loop still turns during a walk (timers, Ctrl+C, the window).
    expect(ticks).toBeGreaterThan(0);
  });

  it.skipIf(process.getuid?.() === 0)('a really unreadable folder is a warning, not a crash', async () => {
    const root = join(tmp, 'perm');
    await mkdir(join(root, 'closed'), { recursive: true });
    await writeFile(join(root, 'closed/a.JPG'), 'x');
    await writeFile(join(root, 'b.JPG'), 'x');
    await chmod(join(root, 'closed'), 0o000);
    try {
      const warnings: DiscoverWarning[] = [];
      const files = await collect([root], { onWarning: (w) => warnings.push(w) });
      expect(files.map((f) => f.relPath)).toEqual(['b.JPG']);
      expect(warnings).toHaveLength(1);
    } finally {
      await chmod(join(root, 'closed'), 0o755);
    }
  });
});
