/**
 * Lanes: the class of each file and its default lane, hand-written (the
 * table the lanes are), and the order due rows come in, on a real SQLite
 * file across a restart and across cards.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FileKind } from '../media/discover.js';
import {
  classify,
  DEFAULT_LANES,
  FILE_CLASSES,
  laneOf,
  OPEN_SQL,
  type FileClass,
  type LaneName,
} from './lanes.js';
import { Queue } from './queue.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-lanes-'));
  file = path.join(dir, 'queue.db');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the lanes table', () => {
  it('says what each file of a DJI card is to the office', () => {
    const table: Array<[string, FileKind, FileClass]> = [
      ['DCIM/DJI_202405061102_001_Waypoint1/DJI_202405061102_001_Timestamp.MRK', 'rtk', 'rtk'],
      ['DCIM/DJI_202405061102_001_Waypoint1/DJI_202405061102_001_Rinex.obs', 'rtk', 'rtk'],
      ['DCIM/DJI_202405061102_001_Waypoint1/DJI_202405061102_001_PPKRAW.bin', 'rtk', 'rtk'],
      ['DCIM/100MEDIA/DJI_0001.MRK', 'other', 'rtk'],
      ['DCIM/100MEDIA/DJI_0001.SRT', 'other', 'log'],
      ['DCIM/100MEDIA/dji_0001.srt', 'other', 'log'],
      ['ascmhl/0001_CARD_2024-05-06_110203Z.mhl', 'other', 'manifest'],
      ['DCIM/100MEDIA/DJI_0001.JPG', 'media', 'photo'],
      ['DCIM/100MEDIA/DJI_0002_T.JPG', 'media', 'photo'],
      ['DCIM/100MEDIA/DJI_0003.DNG', 'media', 'photo'],
      ['DCIM/100MEDIA/DJI_0004.MP4', 'media', 'video'],
      ['DCIM/100MEDIA/DJI_0005.mov', 'media', 'video'],
      ['DCIM/100MEDIA/DJI_0004.LRF', 'other', 'preview'],
      ['DCIM/100MEDIA/DJI_0004.THM', 'other', 'preview'],
      ['MISC/THM/100/DJI_0001.JPG', 'other', 'misc'],
      ['MISC/IDX/DJI_0001.IDX', 'other', 'misc'],
      ['MISC/LOG/FLY001.SRT', 'other', 'log'],
      ['DCIM/100MEDIA/notes.txt', 'other', 'misc'],
    ];
    expect(table.map(([p, k]) => classify(p, k))).toEqual(table.map(([, , c]) => c));
  });

  it('puts each class in its lane by default, and the setting moves one class only', () => {
    const expected: Record<FileClass, LaneName> = {
      rtk: 'first',
      log: 'first',
      manifest: 'first',
      photo: 'photos',
      video: 'videos',
      preview: 'previews',
      misc: 'previews',
      flagged: 'flagged',
    };
    expect(Object.fromEntries(FILE_CLASSES.map((c) => [c, laneOf(c)]))).toEqual(expected);
    expect(DEFAULT_LANES).toEqual(expected);
    const moved = Object.fromEntries(FILE_CLASSES.map((c) => [c, laneOf(c, { video: 'first' })]));
    expect(moved).toEqual({ ...expected, video: 'first' });
  });
});

const TARGET = { key: 'https://a.example#ws-1', label: 'https://a.example', workspaceId: 'ws-1' };

function open(): Queue {
  const q = new Queue(file);
  q.bindTarget(TARGET);
  return q;
}

/** The due rows' paths, in the order the engine takes them. */
const order = (q: Queue): string[] =>
  q.readyIds(100).map((id) => {
    const r = q.get(id);
    return `${r?.sourceId}:${r?.relPath}`;
  });

const observed = (sourceId: string, files: Array<[string, FileKind]>) =>
  files.map(([relPath, kind], i) => ({
    sourceId,
    relPath,
    absPath: `/media/${sourceId}/${relPath}`,
    size: 100 + i,
    mtimeMs: 1,
    kind,
  }));

describe('the order of due rows', () => {
  const OLD_CARD = observed('card-old', [
    ['DCIM/100MEDIA/DJI_0001.MP4', 'media'],
    ['DCIM/100MEDIA/DJI_0001.LRF', 'other'],
    ['DCIM/100MEDIA/DJI_0001.SRT', 'other'],
    ['DCIM/100MEDIA/DJI_0002.JPG', 'media'],
    ['MISC/IDX/DJI_0001.IDX', 'other'],
  ]);
  const NEW_CARD = observed('card-new', [
    ['DCIM/100MEDIA/DJI_0003.MP4', 'media'],
    ['DCIM/100MEDIA/DJI_0004.JPG', 'media'],
    ['DCIM/DJI_202405061102_001/DJI_202405061102_001_Timestamp.MRK', 'rtk'],
    ['DCIM/100MEDIA/DJI_0003.SRT', 'other'],
  ]);
  const LANED = [
    'card-old:DCIM/100MEDIA/DJI_0001.SRT',
    'card-new:DCIM/DJI_202405061102_001/DJI_202405061102_001_Timestamp.MRK',
    'card-new:DCIM/100MEDIA/DJI_0003.SRT',
    'card-old:DCIM/100MEDIA/DJI_0002.JPG',
    'card-new:DCIM/100MEDIA/DJI_0004.JPG',
    'card-old:DCIM/100MEDIA/DJI_0001.MP4',
    'card-new:DCIM/100MEDIA/DJI_0003.MP4',
    'card-old:DCIM/100MEDIA/DJI_0001.LRF',
    'card-old:MISC/IDX/DJI_0001.IDX',
  ];

  it('goes lane by lane across cards, then oldest first, and holds across a restart', () => {
    let q = open();
    q.observe(OLD_CARD);
    q.observe(NEW_CARD);
    expect(order(q)).toEqual(LANED);
    q.close();
    q = open();
    expect(order(q)).toEqual(LANED);
    // A retry waiting for its time keeps its lane once due again.
    q.close();
  });

  it('follows a changed setting for files already queued, and after a restart', () => {
    let q = open();
    q.observe(OLD_CARD);
    q.observe(NEW_CARD);
    q.lanes.order({ video: 'first', log: 'previews' });
    const moved = order(q);
    expect(moved.slice(0, 3)).toEqual([
      'card-old:DCIM/100MEDIA/DJI_0001.MP4',
      'card-new:DCIM/100MEDIA/DJI_0003.MP4',
      'card-new:DCIM/DJI_202405061102_001/DJI_202405061102_001_Timestamp.MRK',
    ]);
    expect(moved.slice(-2)).toEqual([
      'card-old:MISC/IDX/DJI_0001.IDX',
      'card-new:DCIM/100MEDIA/DJI_0003.SRT',
    ]);
    q.close();
    q = open();
    expect(order(q)).toEqual(moved);
    q.close();
  });

  it('puts rows recorded before lanes existed in their lanes when the queue opens', () => {
    let q = open();
    q.observe(OLD_CARD);
    q.close();
    // What a queue of the previous version holds: no class, every row in lane 0.
    const db = new Database(file);
    db.prepare('UPDATE files SET file_class = NULL, lane = 0').run();
    db.close();
    q = open();
    expect(order(q)).toEqual(LANED.filter((p) => p.startsWith('card-old:')));
    q.close();
  });

  it('reads no row when the queue opens with the order it has (issue 33: every row was read)', () => {
    let q = open();
    q.observe(OLD_CARD);
    q.observe(NEW_CARD);
    q.lanes.order({ video: 'first' });
    const videosFirst = order(q);
    expect(videosFirst).not.toEqual(LANED);
    q.close();
    // The statements each open runs, as SQLite plans them on the real file: ranges of an index, not the table.
    const db = new Database(file);
    const plan = (sql: string, ...params: unknown[]) =>
      db
        .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((r) => r.detail)
        .join('; ');
    const INDEX = /^SEARCH files USING (COVERING )?INDEX files_class_lane/;
    for (const sql of [OPEN_SQL.down, OPEN_SQL.up]) expect(plan(sql, 0, 'photo', 0)).toMatch(INDEX);
    expect(plan(OPEN_SQL.unclassified)).toMatch(INDEX);
    db.close();
    // And the order holds: the same setting again moves nothing, another moves the videos back.
    q = open();
    q.lanes.order({ video: 'first' });
    expect(order(q)).toEqual(videosFirst);
    q.lanes.order({});
    expect(order(q)).toEqual(LANED);
    q.close();
  });
});
