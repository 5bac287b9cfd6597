import { describe, expect, it } from 'vitest';
import { safeToFormat } from './safe-to-format.js';
import type { CardFileFact, SafeToFormatInput } from './types.js';

const TARGET = 'server-a|ws-survey';
const AT = '2024-05-06T11:02:03Z';
const FOLDER = 'DCIM/DJI_202405061012_003_Quarry';

/** A file done and verified in the current target: the baseline each case spoils once. */
const done = (name: string, kind: 'media' | 'rtk' = 'media'): CardFileFact => ({
  relPath: `${FOLDER}/${name}`,
  kind,
  size: 1000,
  state: 'done',
  acknowledged: { how: kind === 'rtk' ? 'stored' : 'callback', targetId: TARGET, at: AT },
  verified: { targetId: TARGET, at: AT, found: true, sizeMatches: true, checksum: 'match' },
});

const card = (files: CardFileFact[], over: Partial<SafeToFormatInput> = {}): SafeToFormatInput => ({
  card: { id: 'card-1', label: 'M3E_CARD' },
  target: { id: TARGET, workspaceLabel: 'Survey West' },
  scanComplete: true,
  files,
  flights: [{ folder: FOLDER, incomplete: false, flags: [] }],
  acceptedFlights: [],
  ...over,
});

const good = (): CardFileFact[] => [
  done('DJI_20240506101512_0001_V.JPG'),
  {
    ...done('DJI_20240506101514_0002_V.JPG'),
    acknowledged: { how: 'fast-upload', targetId: TARGET, at: AT },
  },
  {
    ...done('DJI_20240506101516_0003_V.JPG'),
    verified: { targetId: TARGET, at: AT, found: true, sizeMatches: true, checksum: 'not-given' },
  },
  done('DJI_202405061012_003_Timestamp.MRK', 'rtk'),
  done('DJI_202405061012_003_Rinex.obs', 'rtk'),
];

/** good() with one file replaced. */
const spoil = (i: number, patch: Partial<CardFileFact>): CardFileFact[] =>
  good().map((f, j) => (j === i ? { ...f, ...patch } : f));

describe('safeToFormat', () => {
  it('is safe when every file is acknowledged and verified in the current target', () => {
    const v = safeToFormat(card(good()));
    expect(v.reasons).toEqual([]);
    expect(v.safe).toBe(true);
    expect(v.message).toBe('M3E_CARD: 5 files verified in Survey West — safe to format');
    expect(v.counts).toMatchObject({
      files: 5,
      media: 3,
      rtk: 2,
      verified: 5,
      pending: 0,
      failed: 0,
      waiting: 0,
    });
  });

  it('not with a file still on its way', () => {
    const v = safeToFormat(card(spoil(0, { state: 'pending', acknowledged: null, verified: null })));
    expect(v.safe).toBe(false);
    expect(v.reasons).toEqual([
      '1 file still on the way (DJI_20240506101512_0001_V.JPG): wait until they are done.',
    ]);
    expect(v.message).toBe('M3E_CARD: not safe to format yet — 1 on the way');
    expect(v.counts.verified).toBe(4);
  });

  it('files not moving are not "on the way": waiting for the server (its reason), or left by a run that ended (issue 30)', () => {
    const held = (patch: Partial<CardFileFact> = {}) =>
      spoil(0, { state: 'pending', acknowledged: null, verified: null, ...patch });
    // An agent at work, the file waits for the server: its reason, no "wait until they are done".
    const live = safeToFormat(
      card(
        held({ waitReason: 'The server cannot be reached. Uploads continue by themselves when it is back.' }),
      ),
    );
    expect(live.reasons).toEqual([
      '1 file not uploaded yet (DJI_20240506101512_0001_V.JPG): The server cannot be reached. Uploads continue by themselves when it is back.',
    ]);
    expect(live.message).toBe('M3E_CARD: not safe to format yet — 1 not uploaded yet');
    // The run gave up on the server: the reason the run stopped, and what to do.
    const refused = safeToFormat(
      card(held({ waitReason: 'Some other words.' }), {
        stopped: { reason: 'Nothing answers at this address. Check the server address.', once: 'it answers' },
      }),
    );
    expect(refused.reasons).toEqual([
      '1 file not uploaded yet (DJI_20240506101512_0001_V.JPG): Nothing answers at this address. Check the server address; run sync again once it answers.',
    ]);
    expect(refused.counts).toMatchObject({ pending: 1, notSent: 1 });
    // A question ends its sentence: the advice is a sentence of its own.
    const silent = safeToFormat(
      card(held(), { stopped: { reason: 'No answer within 10 s: is it overloaded?', once: 'it answers' } }),
    );
    expect(silent.reasons[0]).toMatch(
      /: No answer within 10 s: is it overloaded\? Run sync again once it answers\.$/,
    );
    // The run simply ended before them.
    const ended = safeToFormat(card(held(), { stopped: { reason: null, once: 'it answers' } }));
    expect(ended.reasons).toEqual([
      '1 file not uploaded yet (DJI_20240506101512_0001_V.JPG): the run ended before they were sent; run sync again.',
    ]);
  });

  it('not with a failed file, and says why', () => {
    const v = safeToFormat(
      card(spoil(1, { state: 'failed', error: 'The server refused this file: storage full.' })),
    );
    expect(v.safe).toBe(false);
    expect(v.reasons[0]).toBe(
      '1 file failed (DJI_20240506101514_0002_V.JPG): The server refused this file: storage full. Read why in the list, fix it and choose Retry.',
    );
  });

  it('not with a pulled card (files waiting for it), nor with a scan cut short', () => {
    const waiting = safeToFormat(card(spoil(3, { state: 'waiting', acknowledged: null, verified: null })));
    expect(waiting.safe).toBe(false);
    expect(waiting.reasons[0]).toMatch(
      /^1 file waiting for the card \(DJI_202405061012_003_Timestamp.MRK\): insert the card again/,
    );

    const cut = safeToFormat(card(good(), { scanComplete: false }));
    expect(cut.safe).toBe(false);
    expect(cut.reasons).toEqual([
      'The card was not read to the end: insert it again and let Drone Media Sync read all of it.',
    ]);
    expect(cut.message).toBe('M3E_CARD: not safe to format yet — card not read to the end');
  });

  it('not when a file acknowledged by its callback is missing from the bucket', () => {
    const v = safeToFormat(
      card(
        spoil(0, {
          verified: { targetId: TARGET, at: AT, found: false, sizeMatches: false, checksum: 'not-given' },
        }),
      ),
    );
    expect(v.safe).toBe(false);
    expect(v.reasons[0]).toMatch(
      /^1 file missing from the bucket of Survey West although the server acknowledged them .*do not format/,
    );
    expect(v.counts.notVerified).toBe(1);
  });

  it('not when the bucket has another size or checksum, or was not checked yet', () => {
    expect(
      safeToFormat(
        card(
          spoil(0, {
            verified: { targetId: TARGET, at: AT, found: true, sizeMatches: false, checksum: 'not-given' },
          }),
        ),
      ).safe,
    ).toBe(false);
    const mismatch = safeToFormat(
      card(
        spoil(0, {
          verified: { targetId: TARGET, at: AT, found: true, sizeMatches: true, checksum: 'mismatch' },
        }),
      ),
    );
    expect(mismatch.reasons[0]).toMatch(/differ from the card/);
    const unchecked = safeToFormat(card(spoil(4, { verified: null })));
    expect(unchecked.reasons[0]).toMatch(/^1 file not yet checked in the bucket of Survey West/);
  });

  it('not after a target switch: acknowledgements and checks of another target do not count', () => {
    const OTHER = 'server-b|ws-office';
    const files = good().map((f) => ({
      ...f,
      acknowledged: f.acknowledged && { ...f.acknowledged, targetId: OTHER },
      verified: f.verified && { ...f.verified, targetId: OTHER },
    }));
    const v = safeToFormat(card(files));
    expect(v.safe).toBe(false);
    expect(v.counts.notAcknowledged).toBe(5);
    expect(v.reasons).toEqual([
      expect.stringMatching(
        /^5 files not acknowledged by Survey West \(.* and 2 more\): they went to another workspace or server/,
      ),
    ]);
    // acknowledged here but only checked in the other bucket: not verified
    const half = safeToFormat(
      card(
        spoil(0, {
          verified: { targetId: OTHER, at: AT, found: true, sizeMatches: true, checksum: 'match' },
        }),
      ),
    );
    expect(half.safe).toBe(false);
    expect(half.counts.notVerified).toBe(1);
  });

  it('a media file merely stored (no callback) is not acknowledged; an RTK file is', () => {
    const v = safeToFormat(card(spoil(0, { acknowledged: { how: 'stored', targetId: TARGET, at: AT } })));
    expect(v.safe).toBe(false);
    expect(v.counts.notAcknowledged).toBe(1);
  });

  it('not with an incomplete flight, until the crew accepts it', () => {
    const flights = [
      {
        folder: FOLDER,
        incomplete: true,
        flags: [
          {
            code: 'photos-missing' as const,
            severity: 'incomplete' as const,
            message: '1 photo missing: exposure 7.',
          },
        ],
      },
    ];
    const v = safeToFormat(card(good(), { flights }));
    expect(v.safe).toBe(false);
    expect(v.reasons).toEqual([
      'Flight DJI_202405061012_003_Quarry is incomplete: 1 photo missing: exposure 7. If it is fine as it is, accept the flight to format anyway.',
    ]);
    expect(v.message).toBe('M3E_CARD: not safe to format yet — 1 flight incomplete');

    const accepted = safeToFormat(card(good(), { flights, acceptedFlights: [FOLDER] }));
    expect(accepted.safe).toBe(true);
    expect(accepted.counts).toMatchObject({ flightsIncomplete: 1, flightsAccepted: 1 });
  });

  it('an empty card is not declared safe', () => {
    const v = safeToFormat(card([], { flights: [] }));
    expect(v.safe).toBe(false);
    expect(v.message).toBe('M3E_CARD: not safe to format yet — no files found');
  });

  it('lists every problem at once', () => {
    const files = good();
    files[0] = { ...files[0]!, state: 'pending' };
    files[1] = { ...files[1]!, state: 'failed' };
    files[2] = { ...files[2]!, state: 'waiting' };
    const v = safeToFormat(card(files));
    expect(v.reasons).toHaveLength(3);
    expect(v.message).toBe(
      'M3E_CARD: not safe to format yet — 1 on the way, 1 waiting for the card, 1 failed',
    );
  });
});
