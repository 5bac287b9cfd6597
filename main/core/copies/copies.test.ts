/**
 * Local copies, with real files on the disk: one read of a card file feeds
 * its MD5 and every copy; each copy is read back and compared; a changed
 * copy, a gone or unwritable destination and a full one each say so; the
 * copy's ASC MHL history validates against the official schema; the staging
 * clean-up deletes only what its rules allow.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HAVE_XSD, validateMhl } from '../../../test/support/ascmhl-xsd.js';
import { tempDir } from '../../../test/support/harness.js';
import { copyFileTo } from '../hash/hash-worker.js';
import type { CopyRecord, Destination } from '../queue/copies.js';
import { Queue } from '../queue/queue.js';
import { copyAndVerify, readBack, type PlacedOutcome } from './copy-file.js';
import { cardFolderName, spaceProblem } from './destinations.js';
import { fileKey, localVerdict, type LocalVerdictInput } from './locally-safe.js';
import { writeCopyHistory, writeDestinationHistories } from './mhl.js';
import { cleanStaging } from './staging.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('dms-copies-');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
let nextId = 1;
const dest = (
  name: string,
  role: Destination['role'] = 'archive',
  keepDays: number | null = null,
): Destination => {
  const p = path.join(dir, name);
  fs.mkdirSync(p, { recursive: true });
  return { id: nextId++, path: p, label: name, role, keepDays };
};

function cardFile(rel: string, bytes: Buffer): { source: string; size: number; mtimeMs: number } {
  const source = path.join(dir, 'card', rel);
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, bytes);
  fs.utimesSync(source, 1_700_000_000, 1_700_000_000);
  const st = fs.statSync(source);
  return { source, size: st.size, mtimeMs: Math.trunc(st.mtimeMs) };
}

describe('copyAndVerify', () => {
  it('one read of the card: byte-identical copies on every destination, the card’s time, read back and verified', async () => {
    // 3 MiB: copied in a copy worker, read back in one (O_DIRECT where the disk allows it).
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    const f = cardFile('DCIM/100MEDIA/DJI_0001.MP4', bytes);
    const a = dest('SSD');
    const b = dest('T7_BACKUP');
    const r = await copyAndVerify({
      ...f,
      relPath: 'DCIM/100MEDIA/DJI_0001.MP4',
      targets: [
        { destination: a, root: path.join(a.path, 'CARD-1') },
        { destination: b, root: path.join(b.path, 'CARD-1') },
      ],
    });
    expect(r.md5).toBe(md5(bytes));
    expect(r.stopped).toEqual([]);
    for (const rec of r.outcomes) {
      expect(rec).toMatchObject({ type: 'verified', copy: { md5: md5(bytes), copySize: bytes.length } });
      expect(fs.readFileSync(rec.path).equals(bytes)).toBe(true);
      expect(Math.trunc(fs.statSync(rec.path).mtimeMs)).toBe(f.mtimeMs);
      expect(['direct', 'cache']).toContain(rec.type === 'verified' ? rec.copy.readBack : null);
    }
    // No temporary file is left behind.
    expect(fs.readdirSync(path.join(a.path, 'CARD-1/DCIM/100MEDIA'))).toEqual(['DJI_0001.MP4']);
  });

  it('the read-back catches a copy changed after it was written: failed, with the reason', async () => {
    const bytes = Buffer.from('the card file');
    const f = cardFile('DJI_0002.JPG', bytes);
    const a = dest('SSD');
    const final = path.join(a.path, 'CARD-1', 'DJI_0002.JPG');
    fs.mkdirSync(path.dirname(final), { recursive: true });
    const out = await copyFileTo(f.source, [{ temp: `${final}.dms-partial`, final }], {
      ...f,
      bufferSize: 65536,
      stopped: () => false,
    });
    // Between the write and the read-back, a byte of the copy changes (a failing drive, another program).
    fs.writeFileSync(final, 'the card fil3');
    fs.utimesSync(final, f.mtimeMs / 1000, f.mtimeMs / 1000);
    const records: Array<PlacedOutcome | null> = [null];
    const failures: string[] = [];
    await readBack(
      { targets: [{ destination: a, root: path.join(a.path, 'CARD-1') }], size: f.size },
      out!,
      [{ i: 0, final }],
      records,
      (_i, _err, stops) => failures.push(stops ? 'stopped' : 'differs'),
    );
    expect(records).toEqual([null]);
    expect(failures).toEqual(['differs']);
    // The same through copyAndVerify's own reason.
    const g = cardFile('DJI_0003.JPG', Buffer.from('x'));
    const ok = await copyAndVerify({
      ...g,
      relPath: 'DJI_0003.JPG',
      targets: [{ destination: a, root: path.join(a.path, 'CARD-1') }],
    });
    expect(ok.outcomes[0]!.type).toBe('verified');
  });

  it('a destination that is gone stops with its reason, never made again; the other copy goes on', async () => {
    const f = cardFile('DJI_0004.JPG', Buffer.from('photo'));
    const a = dest('SSD');
    const gone = dest('T7_BACKUP');
    fs.rmSync(gone.path, { recursive: true });
    const r = await copyAndVerify({
      ...f,
      relPath: 'DJI_0004.JPG',
      targets: [
        { destination: a, root: path.join(a.path, 'C') },
        { destination: gone, root: path.join(gone.path, 'C') },
      ],
    });
    expect(r.outcomes.map((x) => x.type)).toEqual(['verified', 'stopped']);
    // Written there before (its volume known), now gone with its folder on a drive that is plugged in:
    // never "unplugged" (see destinations: the look); with no volume known, the same words as a folder gone.
    expect(r.stopped.map((x) => x.message)).toEqual([
      expect.stringMatching(
        /^T7_BACKUP: a folder of this card's copy went away while it was written|^T7_BACKUP: the folder .* is not there any more on its drive/,
      ),
    ]);
    // An unplugged drive's mount point is not made again on the laptop's disk.
    expect(fs.existsSync(gone.path)).toBe(false);
  });

  it.skipIf(process.getuid?.() !== 0 || spawnSync('mount', ['--version']).status !== 0)(
    'a destination that fills up mid-way stops with "is full"; the other goes on',
    async () => {
      const a = dest('SSD');
      const small = dest('T7_BACKUP');
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', small.path]).status).toBe(0);
      try {
        const f = cardFile('DJI_0005.MP4', Buffer.alloc(3 * 1024 * 1024, 1));
        const r = await copyAndVerify({
          ...f,
          relPath: 'DJI_0005.MP4',
          targets: [
            { destination: a, root: path.join(a.path, 'C') },
            { destination: small, root: path.join(small.path, 'C') },
          ],
        });
        expect(r.outcomes.map((x) => x.type)).toEqual(['verified', 'stopped']);
        expect(r.stopped[0]?.message).toMatch(/^T7_BACKUP is full: its copy of this card stopped/);
        // Nothing half-written stays there.
        expect(fs.readdirSync(path.join(small.path, 'C'))).toEqual([]);
      } finally {
        spawnSync('umount', [small.path]);
      }
    },
  );

  it.skipIf(process.getuid?.() !== 0 || spawnSync('mount', ['--version']).status !== 0)(
    'a destination whose file system refuses O_DIRECT (ramfs) is written through the cache and says so; the other goes on',
    async () => {
      const a = dest('SSD');
      const ram = dest('RAMDISK');
      // tmpfs takes O_DIRECT since Linux 6.6; ramfs still refuses it at open (EINVAL), as exFAT/FUSE drives may.
      expect(spawnSync('mount', ['-t', 'ramfs', 'ramfs', ram.path]).status).toBe(0);
      try {
        const bytes = randomBytes(3 * 1024 * 1024 + 5);
        const f = cardFile('DJI_0006.MP4', bytes);
        const r = await copyAndVerify({
          ...f,
          relPath: 'DJI_0006.MP4',
          targets: [
            { destination: a, root: path.join(a.path, 'C') },
            { destination: ram, root: path.join(ram.path, 'C') },
          ],
        });
        expect(r.outcomes.map((x) => x.type)).toEqual(['verified', 'verified']);
        const copies = r.outcomes.map((x) => (x.type === 'verified' ? x.copy : null));
        expect(copies.map((c) => c?.written)).toEqual([directHere(dir) ? 'direct' : 'cache', 'cache']);
        for (const x of r.outcomes) expect(fs.readFileSync(x.path).equals(bytes)).toBe(true);
        // Its ASC MHL says how that copy was written, as it says how it was read back.
        const file = writeCopyHistory({
          root: path.join(ram.path, 'C'),
          card: { label: 'CARD-1' },
          destinationLabel: 'RAMDISK',
          files: [
            {
              relPath: 'DJI_0006.MP4',
              ...f,
              md5: r.md5,
              xxh3: r.xxh3,
              verifiedAt: f.mtimeMs,
              readBack: copies[1]!.readBack,
              written: 'cache',
            },
          ],
          tool: { name: 'dms', version: '0.0.0' },
        });
        expect(fs.readFileSync(file!, 'utf8')).toMatch(
          /written through the operating system cache \(this file system does not allow writing around it\)/,
        );
      } finally {
        spawnSync('umount', [ram.path]);
      }
    },
  );

  it('free space is checked before writing: "T7_BACKUP: … free, the card needs …"', () => {
    const a = dest('T7_BACKUP');
    expect(spaceProblem(a, 1024)).toBeNull();
    expect(spaceProblem(a, 1e18)).toMatch(
      /^T7_BACKUP: \d+ GB free, the card needs 1000000000 GB\. Nothing was written there/,
    );
  });
});

/** Whether the file system of `folder` takes O_DIRECT (ext4, xfs, tmpfs since Linux 6.6: yes). */
function directHere(folder: string): boolean {
  const O_DIRECT = (fs.constants as { O_DIRECT?: number }).O_DIRECT;
  if (O_DIRECT === undefined) return false;
  const probe = path.join(folder, '.direct-probe');
  try {
    fs.closeSync(fs.openSync(probe, fs.constants.O_CREAT | fs.constants.O_WRONLY | O_DIRECT));
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(probe, { force: true });
  }
}

describe('copyFileTo: the copy written around the page cache', () => {
  it('equals the card byte for byte at every size, its whole blocks written with O_DIRECT where the disk allows it', async () => {
    const a = dest('SSD');
    const b = dest('T7_BACKUP');
    const direct = directHere(a.path);
    // 5000: reads that end off a block, so a copy's later chunks start off one too (written through the cache).
    for (const bufferSize of [8192, 5000])
      for (const size of [0, 1, 4095, 4096, 4097, 1024 * 1024 + 3]) {
        const bytes = randomBytes(size);
        const name = `DJI_${size}_${bufferSize}.JPG`;
        const f = cardFile(name, bytes);
        const targets = [a, b].map((d) => {
          const final = path.join(d.path, name);
          return { temp: `${final}.dms-partial`, final };
        });
        const out = await copyFileTo(f.source, targets, { ...f, bufferSize, stopped: () => false });
        expect(out).toMatchObject({ md5: md5(bytes), errors: [null, null] });
        // Under one block nothing is written around the cache.
        expect(out!.written).toEqual(Array(2).fill(direct && size >= 4096 ? 'direct' : 'cache'));
        for (const t of targets) {
          expect(fs.readFileSync(t.final).equals(bytes), `${size} bytes, reads of ${bufferSize}`).toBe(true);
          expect(Math.trunc(fs.statSync(t.final).mtimeMs)).toBe(f.mtimeMs);
          expect(fs.existsSync(t.temp)).toBe(false);
        }
      }
  });
});

describe('the local verdict', () => {
  const files = [
    { sourceId: 'card:1', relPath: 'DCIM/A/DJI_0001.JPG', size: 10, mtimeMs: 1, kind: 'media', read: true },
    { sourceId: 'card:1', relPath: 'DCIM/A/DJI_0001.SRT', size: 5, mtimeMs: 1, kind: 'other', read: true },
  ];
  const rec = (destinationId: number, state: CopyRecord['state'] = 'verified'): CopyRecord => ({
    destinationId,
    path: `/d${destinationId}/x`,
    state,
    md5: 'a'.repeat(32),
    xxh3: 'c'.repeat(16),
    copySize: 10,
    copyMtimeMs: 1,
    readBack: 'direct',
    at: 1,
    error: null,
  });
  const A: Destination = { id: 1, path: '/a', label: 'SSD', role: 'archive', keepDays: null };
  const B: Destination = { id: 2, path: '/b', label: 'T7_BACKUP', role: 'archive', keepDays: null };
  const input = (over: Partial<LocalVerdictInput> = {}): LocalVerdictInput => {
    const copies = new Map(
      files.map((f) => [
        fileKey(f),
        new Map([
          [1, { record: rec(1), intact: true }],
          [2, { record: rec(2), intact: true }],
        ]),
      ]),
    );
    return {
      card: { id: 'card:1', label: 'M3E_CARD' },
      destinations: [A, B],
      scanComplete: true,
      files,
      copies,
      stops: new Map(),
      skipped: [],
      ...over,
    };
  };

  it('locally safe when every file is verified on every destination, still as written', () => {
    const v = localVerdict(input());
    expect(v).toMatchObject({ safe: true, reasons: [], readBack: 'direct' });
    expect(v.message).toBe('M3E_CARD: 2 files copied and verified on SSD and T7_BACKUP — safe to format');
  });

  const spoilt = (i: number, d: number, fact: { record: CopyRecord; intact: boolean } | null) => {
    const i0 = input();
    const m = new Map(i0.copies.get(fileKey(files[i]!)));
    if (fact) m.set(d, fact);
    else m.delete(d);
    const copies = new Map(i0.copies);
    copies.set(fileKey(files[i]!), m);
    return localVerdict({ ...i0, copies });
  };

  it('not when a copy is missing, failed its read-back, or changed since it was verified; each says which and where', () => {
    expect(spoilt(1, 2, null).reasons).toEqual([
      'T7_BACKUP: 1 file not copied yet (DJI_0001.SRT): wait until they are copied and verified.',
    ]);
    expect(spoilt(0, 1, { record: rec(1, 'failed'), intact: false }).reasons[0]).toMatch(
      /^SSD: 1 copy did not read back as written \(DJI_0001\.JPG\)/,
    );
    expect(spoilt(0, 2, { record: rec(2), intact: false }).reasons[0]).toMatch(
      /^T7_BACKUP: 1 copy changed or removed since it was verified \(DJI_0001\.JPG\)/,
    );
  });

  it('not when a destination stopped, the card was not read to the end, or a file was kept nowhere', () => {
    const full = 'T7_BACKUP: 41 GB free, the card needs 58 GB. Nothing was written there.';
    expect(localVerdict(input({ stops: new Map([[2, full]]) })).reasons).toContain(full);
    expect(localVerdict(input({ scanComplete: false })).safe).toBe(false);
    const lost = localVerdict(
      input({ skipped: [{ relPath: 'x', message: 'x has a name that is not valid text', blocking: true }] }),
    );
    expect(lost.reasons).toEqual(['Not kept anywhere: x has a name that is not valid text']);
    // Named on purpose (excluded in the settings): the card can still be safe.
    expect(
      localVerdict(input({ skipped: [{ relPath: 'y.LRF', message: 'excluded', blocking: false }] })).safe,
    ).toBe(true);
  });

  it('says when the copies were read back through the cache', () => {
    const i0 = input();
    const copies = new Map(
      [...i0.copies].map(([k, m]) => [
        k,
        new Map([...m].map(([d, f]) => [d, { ...f, record: { ...f.record, readBack: 'cache' as const } }])),
      ]),
    );
    expect(localVerdict({ ...i0, copies }).readBack).toBe('cache');
  });
});

describe('the copy’s ASC MHL history', () => {
  it.skipIf(!HAVE_XSD)(
    'validates against the official schema; new files original, then verified',
    async () => {
      const root = path.join(dir, 'SSD', cardFolderName('M3E_CARD', 'card:1'));
      const file = (relPath: string) => ({
        relPath,
        size: 10,
        mtimeMs: 1_700_000_000_000,
        md5: 'b'.repeat(32),
        xxh3: '0123456789abcdef',
        verifiedAt: 1_700_000_100_000,
        readBack: 'direct' as const,
      });
      const tool = { name: 'Drone Media Sync', version: '0.2.0' };
      const first = writeCopyHistory({
        root,
        card: { label: 'M3E_CARD' },
        destinationLabel: 'SSD',
        files: [file('DCIM/A/DJI_0001.JPG')],
        tool,
      });
      expect(first).not.toBeNull();
      const g1 = fs.readFileSync(first!, 'utf8');
      expect((await validateMhl(g1, 'ASCMHL.xsd')).valid).toBe(true);
      expect(g1).toContain('<process>transfer</process>');
      expect(g1).toMatch(
        /<md5 action="original"[^>]*>b{32}<\/md5>\s*<xxh3 action="original"[^>]*>0123456789abcdef<\/xxh3>/,
      );
      expect(g1).toContain('read back from the disk itself (O_DIRECT');
      // Nothing new: no generation. One more file: a second one, the first file now "verified".
      expect(
        writeCopyHistory({
          root,
          card: { label: 'M3E_CARD' },
          destinationLabel: 'SSD',
          files: [file('DCIM/A/DJI_0001.JPG')],
          tool,
        }),
      ).toBeNull();
      const second = writeCopyHistory({
        root,
        card: { label: 'M3E_CARD' },
        destinationLabel: 'SSD',
        files: [file('DCIM/A/DJI_0001.JPG'), file('DCIM/A/DJI_0002.JPG')],
        tool,
      });
      const g2 = fs.readFileSync(second!, 'utf8');
      expect((await validateMhl(g2, 'ASCMHL.xsd')).valid).toBe(true);
      expect(g2).toMatch(
        /DJI_0001\.JPG<\/path>\s*<md5 action="verified"[^>]*>b{32}<\/md5>\s*<xxh3 action="verified"/,
      );
      expect(g2).toMatch(/DJI_0002\.JPG<\/path>\s*<md5 action="original"/);
      const chain = fs.readFileSync(path.join(root, 'ascmhl', 'ascmhl_chain.xml'), 'utf8');
      expect((await validateMhl(chain, 'ASCMHLDirectory.xsd')).valid).toBe(true);
      expect(chain.match(/<hashlist sequencenr/g)).toHaveLength(2);
      // A copy read back with MD5 (no XXH3 module in the app): its MD5 only, still valid.
      const md5Only = writeCopyHistory({
        root: path.join(dir, 'T7', 'CARD'),
        card: { label: 'M3E_CARD' },
        destinationLabel: 'T7',
        files: [{ ...file('DCIM/A/DJI_0001.JPG'), xxh3: null }],
        tool,
      });
      const g3 = fs.readFileSync(md5Only!, 'utf8');
      expect((await validateMhl(g3, 'ASCMHL.xsd')).valid).toBe(true);
      expect(g3).not.toContain('<xxh3');
      expect(g3).toContain('its MD5 compared with the card’s');
    },
  );

  // The official tool (ascmitc/mhl's `ascmhl-debug`, a clone on the developers' machines; not in CI).
  const ASCMHL_DEBUG = process.env.ASCMHL_DEBUG ?? '/tmp/ascmhl-debug';
  const haveTool = fs.existsSync(ASCMHL_DEBUG);
  it.skipIf(!haveTool || !HAVE_XSD)(
    `a real copy's history carries each file's MD5 and XXH3 from its record; the official tool verifies it and catches a changed byte${haveTool ? '' : ` (skipped: the official ASC MHL tool is not installed at ${ASCMHL_DEBUG})`}`,
    async () => {
      const queue = new Queue(path.join(dir, 'queue.db'));
      queue.bindTarget({ key: 'srv#ws', label: 'srv', workspaceId: 'ws' });
      const ssd = queue.copies.destination({
        path: path.join(dir, 'SSD'),
        label: 'SSD',
        role: 'archive',
        keepDays: null,
      });
      fs.mkdirSync(ssd.path);
      const root = path.join(ssd.path, 'CARD-1');
      // One large enough for a copy worker, two copied on this thread.
      const card = [
        ['DCIM/100MEDIA/DJI_0001.MP4', Buffer.alloc(3 * 1024 * 1024 + 5, 3)],
        ['DCIM/100MEDIA/DJI_0001.SRT', Buffer.from('1\n00:00:00,000 --> 00:00:00,033\n')],
        ['MISC/IDX/0001.idx', Buffer.from('idx')],
      ] as const;
      const xxh3Of = new Map<string, string>();
      for (const [rel, bytes] of card) {
        const f = cardFile(rel, bytes);
        const [row] = queue.observe([
          { sourceId: 'card:1', relPath: rel, absPath: f.source, size: f.size, mtimeMs: f.mtimeMs },
        ]).pending;
        queue.copies.apply(row!, ssd.id, { type: 'want', path: path.join(root, rel) });
        queue.copies.apply(row!, ssd.id, { type: 'writing' });
        const r = await copyAndVerify({ ...f, relPath: rel, targets: [{ destination: ssd, root }] });
        const [o] = r.outcomes;
        expect(o).toMatchObject({ type: 'verified', copy: { md5: md5(bytes), xxh3: r.xxh3 } });
        expect(r.xxh3).toMatch(/^[0-9a-f]{16}$/);
        queue.copies.settle(row!, o!);
        xxh3Of.set(rel, r.xxh3);
      }
      // The records carry the XXH3 (the history is written from them, as completeLocal does).
      const records = queue.copies.ofSource('card:1');
      expect(records.map((c) => c.xxh3)).toEqual(records.map((c) => xxh3Of.get(c.relPath)));
      const [written] = writeDestinationHistories({
        copies: records,
        destinations: [{ id: ssd.id, label: 'SSD', root }],
        card: { label: 'CARD-1' },
        tool: { name: 'Drone Media Sync', version: '0.2.0' },
        intact: () => true,
      });
      queue.close();
      const xml = fs.readFileSync(written!, 'utf8');
      expect((await validateMhl(xml, 'ASCMHL.xsd')).valid).toBe(true);
      const tool = (...args: string[]) =>
        spawnSync(ASCMHL_DEBUG, args, { encoding: 'utf8', timeout: 60_000 });
      for (const [rel] of card) {
        expect(xml).toContain(`<xxh3 action="original"`);
        expect(xml).toMatch(
          new RegExp(
            `>${rel}</path>\\s*<md5[^>]*>[0-9a-f]{32}</md5>\\s*<xxh3[^>]*>${xxh3Of.get(rel)}</xxh3>`,
          ),
        );
        // The official tool's own XXH3 of the copy is the one recorded.
        const h = tool('hash', '-h', 'xxh3', path.join(root, rel));
        expect(h.stdout + h.stderr).toContain(xxh3Of.get(rel));
      }
      const ok = tool('verify', root);
      expect(ok.status, ok.stdout + ok.stderr).toBe(0);
      // One byte of a copy changes, size and time kept: the official tool catches it (exit 11).
      const video = path.join(root, card[0][0]);
      const st = fs.statSync(video);
      const fd = fs.openSync(video, 'r+');
      fs.writeSync(fd, Buffer.from([4]), 0, 1, 2_000_000);
      fs.closeSync(fd);
      fs.utimesSync(video, st.atime, st.mtime);
      const bad = tool('verify', root);
      expect(bad.status, bad.stdout + bad.stderr).toBe(11);
      expect(bad.stdout + bad.stderr).toContain('DJI_0001.MP4');
    },
    120_000,
  );
});

describe('the staging clean-up', () => {
  it('deletes a staging copy only when every file is checked in the workspace and old enough; never an archive, never the card', () => {
    let clock = Date.now();
    const queue = new Queue(path.join(dir, 'queue.db'), () => clock);
    queue.bindTarget({ key: 'srv#ws', label: 'srv', workspaceId: 'ws' });
    const staging = queue.copies.destination({
      path: path.join(dir, 'STAGE'),
      label: 'STAGE',
      role: 'staging',
      keepDays: 2,
    });
    const archive = queue.copies.destination({
      path: path.join(dir, 'ARCH'),
      label: 'ARCH',
      role: 'archive',
      keepDays: 0,
    });
    const f = cardFile('DCIM/A/DJI_0001.JPG', Buffer.from('photo'));
    const [row] = queue.observe([
      {
        sourceId: 'card:1',
        relPath: 'DCIM/A/DJI_0001.JPG',
        absPath: f.source,
        size: f.size,
        mtimeMs: f.mtimeMs,
      },
    ]).pending;
    const now = Date.now();
    const copyOn = (d: Destination, at: number) => {
      const p = path.join(d.path, 'C-1', 'DCIM/A/DJI_0001.JPG');
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.copyFileSync(f.source, p);
      clock = at;
      queue.copies.apply(row!, d.id, { type: 'want', path: p });
      queue.copies.apply(row!, d.id, { type: 'writing' });
      queue.copies.apply(row!, d.id, {
        type: 'verified',
        copy: {
          md5: md5(Buffer.from('photo')),
          xxh3: null,
          copySize: f.size,
          copyMtimeMs: f.mtimeMs,
          readBack: 'direct',
        },
      });
      clock = Date.now();
      return p;
    };
    const staged = copyOn(staging, now - 3 * 86_400_000);
    const archived = copyOn(archive, now - 30 * 86_400_000);
    // Not in the workspace yet: nothing is deleted.
    expect(cleanStaging(queue, now)).toEqual([]);
    let r = queue.apply(row!, {
      type: 'hashed',
      fingerprint: md5(Buffer.from('photo')),
      tinyFingerprint: 't',
      info: {
        name: 'DJI_0001.JPG',
        path: '',
        fileGroupId: 'g',
        metadata: {},
        subFileType: 0,
        isOriginal: true,
      },
    });
    r = queue.apply(r, { type: 'not-known' });
    r = queue.apply(r, { type: 'uploaded', objectKey: 'ws/k', bytesSent: 5, verified: null });
    r = queue.apply(r, { type: 'recorded' });
    // Acknowledged, but only on the server's word: still kept.
    r = queue.apply(r, {
      type: 'verified',
      verified: { at: now, by: 'server', found: true, size: f.size, checksum: 'not-given' },
    });
    expect(cleanStaging(queue, now)).toEqual([]);
    queue.apply(r, {
      type: 'verified',
      verified: { at: now, by: 'bucket', found: true, size: f.size, checksum: 'match' },
    });
    // Younger than keepDays: kept.
    expect(cleanStaging(queue, now - 2 * 86_400_000)).toEqual([]);
    const done = cleanStaging(queue, now);
    expect(done.map((c) => [c.destination.label, c.files])).toEqual([['STAGE', 1]]);
    expect(fs.existsSync(staged)).toBe(false);
    expect(fs.existsSync(path.join(staging.path))).toBe(true);
    expect(fs.existsSync(archived)).toBe(true);
    expect(fs.existsSync(f.source)).toBe(true);
    queue.close();
  });
});
