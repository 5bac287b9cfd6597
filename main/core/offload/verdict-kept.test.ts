/**
 * A card's "safe to format" verdict is kept with a stamp of what it was made
 * from and given again while nothing in it changed (issue 33: a re-inserted
 * card of 10,000 done files read and weighed every file again). Each change
 * that decides a verdict makes a fresh one: any column of any file row (the
 * store's triggers count every write, from any connection), the card's
 * scan, skips, accepted flights and MRK files, the target, a destination,
 * the settings, how the run stopped. Real SQLite file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { checkedObject } from '../queue/rows.js';
import { Queue, type QueueRow } from '../queue/queue.js';
import { cardOffload, checksDueBefore, shownFlights, type CardOffload } from './card.js';

const TARGET = { key: 'http://127.0.0.1:7000#ws-1', label: 'http://127.0.0.1:7000', workspaceId: 'ws-1' };
const CARD = { sourceId: 'card-1', label: 'M3E' };
const FOLDER = 'DCIM/DJI_202401051000_001_Survey';
const CHECKED_AT = 1_800_000_000_000;
const md5 = (i: number): string => i.toString(16).padStart(32, '0');

let dir: string;
let file: string;
let queue: Queue;

/** A card of three photos, each uploaded, recorded and found in the bucket: safe to format. */
function safeCard(q: Queue): void {
  const { pending } = q.observe(
    [1, 2, 3].map((i) => ({
      sourceId: CARD.sourceId,
      relPath: `${FOLDER}/DJI_000${i}_W.JPG`,
      absPath: `/media/card/${FOLDER}/DJI_000${i}_W.JPG`,
      size: 4096,
      mtimeMs: 1_704_448_800_000 + i,
    })),
  );
  for (const [i, row] of pending.entries()) {
    let r: QueueRow = q.apply(row, {
      type: 'hashed',
      fingerprint: md5(i),
      tinyFingerprint: 'tiny',
      info: {
        name: `DJI_000${i + 1}_W.JPG`,
        path: 'DJI_202401051000_001_Survey',
        fileGroupId: 'g',
        metadata: {
          created_time: new Date(Date.UTC(2024, 0, 5, 10, 0, i * 2)).toISOString(),
          shoot_position: { lat: 47.1, lng: 8.5 },
          relative_altitude: 80,
        },
        subFileType: 0,
        isOriginal: true,
      },
    });
    r = q.apply(r, { type: 'not-known' });
    const verified = checkedObject({ size: 4096, etag: md5(i) }, 4096, md5(i), CHECKED_AT + i);
    r = q.apply(r, { type: 'uploaded', objectKey: `ws-1/k/${i}.JPG`, bytesSent: 4096, verified });
    r = q.apply(r, { type: 'callback-sent' });
    q.apply(r, { type: 'recorded' });
  }
  q.sources.recordScan(CARD.sourceId, true);
}

/** The verdict made from every file again, whatever is kept (what a kept one must equal). */
function madeAgain(
  q: Queue,
  ...rest: Parameters<typeof cardOffload> extends [Queue, ...infer R] ? R : never
) {
  q.setMeta(`card-verdict ${q.target!.id} ${(rest[0] ?? CARD).sourceId}`, 'not kept');
  return cardOffload(q, ...rest);
}

/** Whether this call made the verdict from the files (true) or gave the kept one (false). */
function made(q: Queue, o: () => CardOffload): { made: boolean; offload: CardOffload } {
  const read = vi.spyOn(q, 'factsOf');
  try {
    const offload = o();
    return { made: read.mock.calls.length > 0, offload };
  } finally {
    read.mockRestore();
  }
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-verdict-kept-'));
  file = path.join(dir, 'queue.db');
  queue = new Queue(file);
  queue.bindTarget(TARGET);
  safeCard(queue);
});
afterEach(() => {
  queue.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('gives the kept verdict of a card nothing changed on, without reading its files', () => {
  const first = cardOffload(queue, CARD);
  expect(first.safe).toBe(true);
  const again = made(queue, () => cardOffload(queue, CARD));
  expect(again.made).toBe(false);
  expect(again.offload.verdict).toEqual(first.verdict);
  expect(again.offload.safe).toBe(true);
  expect(again.offload.message).toBe(first.message);
  expect(again.offload.digest).toBe(first.digest);
  expect(shownFlights(again.offload)).toEqual(shownFlights(first));
  // Its files and flights (the manifest's) are read when asked, as made.
  expect(again.offload.facts).toEqual(first.facts);
  expect(again.offload.flights).toEqual(first.flights);
});

describe('any write to any column of a file row makes the verdict again', () => {
  const db = () => new Database(file);
  /** Columns of a few known words: another of them. */
  const WORDS: Record<string, string> = { kind: 'other', outcome: 'fast-uploaded', error_kind: 'network' };
  // Every column of the files table, changed by another connection (as another process would).
  const changeOf = (name: string, type: string): string =>
    name === 'state'
      ? `state = 'failed'`
      : name === 'source_id'
        ? `source_id = 'card-2'`
        : name in WORDS
          ? `${name} = '${WORDS[name]}'`
          : type === 'INTEGER'
            ? `${name} = coalesce(${name}, 0) + 1`
            : // JSON stays JSON (the same value, another text); other text gets a letter more.
              `${name} = CASE WHEN json_valid(${name}) THEN ' ' || ${name} ELSE coalesce(${name}, '') || 'x' END`;

  it('the table covers every column of the files table', () => {
    const d = db();
    const names = d
      .prepare<[], { name: string }>('PRAGMA table_info(files)')
      .all()
      .map((c) => c.name);
    d.close();
    expect(names.length).toBeGreaterThan(20);
    for (const name of names.filter((n) => n !== 'id' && n !== 'target_id')) {
      cardOffload(queue, CARD); // kept
      const d2 = db();
      const type = d2
        .prepare<[], { name: string; type: string }>('PRAGMA table_info(files)')
        .all()
        .find((c) => c.name === name)!.type;
      d2.prepare(
        `UPDATE files SET ${changeOf(name, type)} WHERE id = (SELECT min(id) FROM files WHERE source_id = ?)`,
      ).run(CARD.sourceId);
      d2.close();
      const after = made(queue, () => cardOffload(queue, CARD));
      expect({ name, made: after.made }).toEqual({ name, made: true });
      expect(after.offload.verdict).toEqual(madeAgain(queue, CARD).verdict);
    }
  });

  it('a file moved to another target, and a row deleted', () => {
    cardOffload(queue, CARD);
    const d = db();
    d.prepare('DELETE FROM files WHERE id = (SELECT min(id) FROM files)').run();
    d.close();
    const after = made(queue, () => cardOffload(queue, CARD));
    expect(after.made).toBe(true);
    expect(after.offload.verdict.counts).toEqual(madeAgain(queue, CARD).verdict.counts);
  });
});

describe('each change that decides a verdict besides the files makes it again', () => {
  type Row = [what: string, change: (q: Queue) => void, offload: (q: Queue) => CardOffload, safe: boolean];
  const same = (q: Queue) => cardOffload(q, CARD);
  const rows: Row[] = [
    // Safe to format is never said from a stale stamp: each of these makes the card unsafe.
    [
      'a file found missing in the bucket',
      (q) => {
        const r = q.list({ sourceId: CARD.sourceId }).at(0)!;
        q.apply(r, { type: 'verified', verified: checkedObject(null, 4096, md5(0), CHECKED_AT + 9) });
      },
      same,
      false,
    ],
    ['the scan cut short', (q) => q.sources.recordScan(CARD.sourceId, false), same, false],
    [
      'a file that could not be read, skipped',
      (q) =>
        q.sources.recordSkips(CARD.sourceId, [
          { relPath: 'DCIM/x.JPG', kind: 'unreadable', message: 'x cannot be read', blocking: true },
        ]),
      same,
      false,
    ],
    [
      'another target bound',
      (q) => q.bindTarget({ key: 'http://127.0.0.1:7001#ws-2', label: 'other', workspaceId: 'ws-2' }),
      same,
      false,
    ],
    // Changes that keep the card safe still make a fresh verdict (its words, counts or flights change).
    [
      'an MRK file of the flight',
      (q) =>
        q.flights.noteMrk(CARD.sourceId, `${FOLDER}/DJI_202401051000_001_Timestamp.MRK`, {
          entries: [],
          problems: [],
        }),
      same,
      false, // photos the MRK does not list: the flight is incomplete
    ],
    [
      'a skip that does not block',
      (q) =>
        q.sources.recordSkips(CARD.sourceId, [
          { relPath: 'DCIM/.DS_Store', kind: 'system', message: 'a computer’s own file', blocking: false },
        ]),
      same,
      true,
    ],
    ['a flight accepted as it is', (q) => q.flights.accept(CARD.sourceId, FOLDER), same, true],
    ['the card named otherwise', () => {}, (q) => cardOffload(q, { ...CARD, label: 'M3E_2' }), true],
    ['the height setting', () => {}, (q) => cardOffload(q, CARD, [], { minHeight: 50 }), true],
    [
      'the run stopped short',
      () => {},
      (q) => cardOffload(q, CARD, [], {}, { reason: 'Nothing answers.', once: 'it answers' }),
      true,
    ],
  ];
  it.each(rows)('%s', (_what, change, offload, safe) => {
    expect(cardOffload(queue, CARD).safe).toBe(true);
    change(queue);
    const after = made(queue, () => offload(queue));
    expect(after.made).toBe(true);
    expect(after.offload.safe).toBe(safe);
    const fresh = madeAgain(queue, after.offload.card, [], {}, null);
    if (offload === same) expect(after.offload.verdict).toEqual(fresh.verdict);
  });

  it('a card with a local destination gets its verdict made every time (the disks count)', () => {
    const ssd = queue.copies.destination({
      path: path.join(dir, 'ssd'),
      label: 'SSD',
      role: 'archive',
      keepDays: null,
    });
    queue.copies.setCounting(CARD.sourceId, [ssd.id]);
    expect(made(queue, () => cardOffload(queue, CARD)).made).toBe(true);
    const again = made(queue, () => cardOffload(queue, CARD));
    expect(again.made).toBe(true);
    expect(again.offload.local).not.toBeNull();
  });
});

describe('a crash never leaves a wrong verdict', () => {
  it('a change committed by another process after the verdict was kept (then this one stopped)', () => {
    expect(cardOffload(queue, CARD).safe).toBe(true);
    queue.close();
    // The next process found the object gone, committed it, and died before any verdict.
    const d = new Database(file);
    d.prepare(
      `UPDATE files SET verified_json = json_set(verified_json, '$.found', json('false')) WHERE id = (SELECT min(id) FROM files)`,
    ).run();
    d.close();
    queue = new Queue(file);
    queue.bindTarget(TARGET);
    const after = made(queue, () => cardOffload(queue, CARD));
    expect(after.made).toBe(true);
    expect(after.offload.safe).toBe(false);
  });

  it('a change rolled back (a crash inside its transaction) leaves the kept verdict, which still holds', () => {
    const first = cardOffload(queue, CARD);
    const d = new Database(file);
    d.exec('BEGIN');
    d.prepare(`UPDATE files SET state = 'failed'`).run();
    d.exec('ROLLBACK');
    d.close();
    const after = made(queue, () => cardOffload(queue, CARD));
    expect(after.made).toBe(false);
    expect(after.offload.verdict).toEqual(first.verdict);
  });

  it('a kept verdict that cannot be read is made again', () => {
    cardOffload(queue, CARD);
    queue.setMeta(`card-verdict ${queue.target!.id} ${CARD.sourceId}`, '{"stamp": ');
    const after = made(queue, () => cardOffload(queue, CARD));
    expect(after.made).toBe(true);
    expect(after.offload.safe).toBe(true);
  });
});

describe('whether a bucket check is due, from the kept verdict', () => {
  it('says when the first file was last checked, and knows nothing once the card changed', () => {
    cardOffload(queue, CARD);
    const list = vi.spyOn(queue, 'list');
    // Checked at CHECKED_AT, +1, +2: due for a check once the oldest is at or before `before`.
    expect(checksDueBefore(queue, CARD, CHECKED_AT - 1)).toBe(false);
    expect(checksDueBefore(queue, CARD, CHECKED_AT)).toBe(true);
    expect(list).not.toHaveBeenCalled();
    list.mockRestore();
    const r = queue.list({ sourceId: CARD.sourceId }).at(-1)!;
    queue.apply(r, {
      type: 'verified',
      verified: checkedObject({ size: 4096, etag: md5(2) }, 4096, md5(2), CHECKED_AT + 100),
    });
    expect(checksDueBefore(queue, CARD, CHECKED_AT - 1)).toBe(true); // not kept: cannot tell
  });

  it('a file vouched for by the server alone is always due', () => {
    queue.commitWaiting();
    const d = new Database(file);
    d.prepare(
      `UPDATE files SET verified_json = json_set(verified_json, '$.by', 'server') WHERE id = (SELECT min(id) FROM files)`,
    ).run();
    d.close();
    cardOffload(queue, CARD);
    expect(checksDueBefore(queue, CARD, 0)).toBe(true);
  });
});
