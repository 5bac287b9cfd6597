import { describe, expect, it } from 'vitest';
import type { CardOffload } from '../core/offload/card.js';
import { CardLedger } from './card-ledger.js';

const MB = 1024 * 1024;

/** The parts of a card's offload the ledger reads: its files, its workspace verdict, its local verdict. */
function offload(o: { done: number; files: number; local: boolean | null; safe?: boolean }): CardOffload {
  const files = Array.from({ length: o.files }, (_, i) => ({
    relPath: `DCIM/F/${i}.JPG`,
    size: 10 * MB,
    state: i < o.done ? 'done' : 'pending',
  }));
  const safe = o.safe ?? o.done === o.files;
  return {
    card: { sourceId: 'card:1', label: 'M3E_CARD' },
    files,
    verdict: {
      safe,
      message: safe
        ? `M3E_CARD: ${o.files} files verified in workspace ws-1 — safe to format`
        : `M3E_CARD: not safe to format yet — ${o.files - o.done} on the way`,
      reasons: safe ? [] : [`${o.files - o.done} files still on the way: wait until they are done.`],
    },
    local:
      o.local === null
        ? null
        : {
            safe: o.local,
            reasons: o.local
              ? []
              : ['T7_BACKUP: 1 file not copied yet (9.JPG): wait until it is copied and verified.'],
            counts: {
              files: o.files,
              everywhere: o.local ? o.files : o.files - 1,
              perDestination: [
                { id: 1, label: 'SSD', verified: o.files, missing: 0, bad: 0 },
                { id: 2, label: 'T7_BACKUP', verified: o.local ? o.files : o.files - 1, missing: 0, bad: 0 },
              ],
            },
            message: o.local
              ? `M3E_CARD: ${o.files} files copied and verified on SSD and T7_BACKUP — safe to format`
              : `M3E_CARD: not safe to format from the copies yet — ${o.files - 1} files of ${o.files} verified on SSD and T7_BACKUP`,
            readBack: 'direct',
          },
  } as unknown as CardOffload;
}

describe('a card’s two verdicts, kept from the agent’s events', () => {
  it('nothing before the first verdict; a destination that stopped is said until the card’s next scan', () => {
    const l = new CardLedger();
    expect(l.view('card:1')).toEqual({
      headline: null,
      local: null,
      workspace: null,
      stopped: [],
      created: [],
    });
    l.stopped('card:1', 'T7_BACKUP', 'T7_BACKUP is not there any more (unplugged?).');
    expect(l.view('card:1').stopped).toEqual([
      { destination: 'T7_BACKUP', message: 'T7_BACKUP is not there any more (unplugged?).' },
    ]);
    l.scanned('card:1');
    expect(l.view('card:1').stopped).toEqual([]);
  });

  it('a destination folder made for a card is said once, and a new scan does not clear it (it is news, not a stop)', () => {
    const l = new CardLedger();
    const said = 'NEW_SSD: the folder /media/NEW_SSD/DroneCopies did not exist yet; it was created.';
    l.created('card:1', 'NEW_SSD', said);
    l.created('card:1', 'NEW_SSD', said);
    l.scanned('card:1');
    expect(l.view('card:1').created).toEqual([{ destination: 'NEW_SSD', message: said }]);
    expect(l.view('card:2').created).toEqual([]);
  });

  it('locally safe: the headline says so and how far the upload is, moved on by every file that gets there', () => {
    const l = new CardLedger();
    l.local('card:1', offload({ done: 0, files: 10, local: true }));
    let v = l.view('card:1');
    expect(v.local).toMatchObject({
      safe: true,
      files: 10,
      verified: 10,
      destinations: [
        { label: 'SSD', verified: 10 },
        { label: 'T7_BACKUP', verified: 10 },
      ],
    });
    expect(v.workspace).toMatchObject({
      safe: false,
      final: false,
      bytesThere: 0,
      bytesTotal: 100 * MB,
      reasons: [],
    });
    expect(v.headline).toEqual({
      safe: true,
      message:
        'M3E_CARD: 10 files copied and verified on SSD and T7_BACKUP — safe to format; the upload continues from the copies (0 bytes of 100 MB sent)',
    });
    l.fileThere('card:1', 10 * MB);
    l.fileThere('card:1', 10 * MB);
    l.fileThere('card:other', 10 * MB); // another card's file moves nothing here
    v = l.view('card:1');
    expect(v.workspace).toMatchObject({ bytesThere: 20 * MB, amount: '20.0 MB of 100 MB' });
    expect(v.headline?.message).toMatch(/\(20\.0 MB of 100 MB sent\)$/);
  });

  it('at rest: the workspace verdict is final; safe there says it all, else its reasons (the copies still free the card)', () => {
    const l = new CardLedger();
    l.offload('card:1', offload({ done: 10, files: 10, local: true }));
    expect(l.view('card:1')).toMatchObject({
      headline: { safe: true, message: 'M3E_CARD: 10 files verified in workspace ws-1 — safe to format' },
      workspace: { safe: true, final: true, amount: '100 MB of 100 MB' },
    });
    l.offload('card:1', offload({ done: 8, files: 10, local: true, safe: false }));
    expect(l.view('card:1')).toMatchObject({
      headline: {
        safe: true,
        message:
          'M3E_CARD: 10 files copied and verified on SSD and T7_BACKUP — safe to format; 80.0 MB of 100 MB in the workspace',
      },
      workspace: {
        safe: false,
        final: true,
        reasons: ['2 files still on the way: wait until they are done.'],
      },
    });
  });

  it('neither holds: the line says what stops it (the copies first, until the card is at rest)', () => {
    const l = new CardLedger();
    l.local('card:1', offload({ done: 0, files: 10, local: false }));
    expect(l.view('card:1').headline).toEqual({
      safe: false,
      message:
        'M3E_CARD: not safe to format from the copies yet — 9 files of 10 verified on SSD and T7_BACKUP',
    });
    l.offload('card:1', offload({ done: 9, files: 10, local: false, safe: false }));
    expect(l.view('card:1').headline).toEqual({
      safe: false,
      message: 'M3E_CARD: not safe to format yet — 1 on the way',
    });
    // No destination at all: no local verdict, the workspace's line.
    l.offload('card:1', offload({ done: 10, files: 10, local: null }));
    expect(l.view('card:1')).toMatchObject({ local: null, headline: { safe: true } });
  });
});
