import { describe, expect, it } from 'vitest';
import { formatBytes, NotificationPolicy, type Activity } from './notifications.js';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const card = (sourceId = 'card:uuid:1234', label = 'M30T-01'): Activity => ({
  type: 'source-added',
  sourceId,
  label,
  isCard: true,
});

describe('notification policy', () => {
  it('announces a card once its scan and wayline matching are done, naming the mission and wayline', () => {
    const p = new NotificationPolicy();
    expect(p.handle(card())).toEqual([]);
    expect(
      p.handle({
        type: 'wayline',
        sourceId: 'card:uuid:1234',
        folder: 'DJI_202209021517_001_Waypoint1',
        waylineName: 'Waypoint1',
      }),
    ).toEqual([]);
    const out = p.handle({ type: 'scanned', sourceId: 'card:uuid:1234', pending: 212, alreadyDone: 3 });
    expect(out).toEqual([
      {
        kind: 'card',
        title: 'Card M30T-01 detected',
        body: '212 new files to upload (3 already uploaded). Mission Waypoint1: wayline “Waypoint1”.',
      },
    ]);
    // Later rescans of the same card (new files noticed by the watcher) say nothing.
    expect(p.handle({ type: 'scanned', sourceId: 'card:uuid:1234', pending: 1, alreadyDone: 215 })).toEqual(
      [],
    );
  });

  it('sums up several flights and says when none matched', () => {
    const p = new NotificationPolicy();
    p.handle(card('card:a', 'A'));
    p.handle({
      type: 'wayline',
      sourceId: 'card:a',
      folder: 'DJI_202209021517_001_Bridge',
      waylineName: 'Bridge inspection A',
    });
    p.handle({
      type: 'wayline',
      sourceId: 'card:a',
      folder: 'DJI_202209021600_002_Tower',
      waylineName: 'Tower',
    });
    p.handle({
      type: 'wayline',
      sourceId: 'card:a',
      folder: 'DJI_202209021700_003_Nothing',
      waylineName: null,
    });
    const [n] = p.handle({ type: 'scanned', sourceId: 'card:a', pending: 40, alreadyDone: 0 });
    expect(n!.body).toBe(
      '40 new files to upload. 2 flights matched to waylines “Bridge inspection A”, “Tower”. 1 flight without a matching wayline.',
    );
  });

  it('tells a crew a card with nothing new can be pulled; watched folders are not announced', () => {
    const p = new NotificationPolicy();
    p.handle(card('card:b', 'B'));
    expect(p.handle({ type: 'scanned', sourceId: 'card:b', pending: 0, alreadyDone: 120 })).toEqual([
      { kind: 'card', title: 'Card B', body: 'All 120 files on it are already uploaded. You can remove it.' },
    ]);
    p.handle({ type: 'source-added', sourceId: 'folder:/data', label: '/data', isCard: false });
    expect(p.handle({ type: 'scanned', sourceId: 'folder:/data', pending: 5, alreadyDone: 0 })).toEqual([]);
  });

  it('does not re-announce a card that flickers in a flaky reader', () => {
    const c = clock();
    const p = new NotificationPolicy({ now: c.now, cardRepeatMs: 60_000 });
    p.handle(card());
    expect(
      p.handle({ type: 'scanned', sourceId: 'card:uuid:1234', pending: 5, alreadyDone: 0 }),
    ).toHaveLength(1);
    c.advance(5_000);
    p.handle({ type: 'source-removed', sourceId: 'card:uuid:1234' });
    p.handle(card());
    expect(p.handle({ type: 'scanned', sourceId: 'card:uuid:1234', pending: 5, alreadyDone: 0 })).toEqual([]);
    c.advance(120_000);
    p.handle(card());
    expect(
      p.handle({ type: 'scanned', sourceId: 'card:uuid:1234', pending: 5, alreadyDone: 0 }),
    ).toHaveLength(1);
  });

  it('sums a sync up once when the engine goes idle: files, size, already on the server — never one per file', () => {
    const p = new NotificationPolicy();
    const notices = [];
    notices.push(...p.handle({ type: 'state', state: 'syncing', message: null }));
    // The agent's run result, as it comes just before the engine goes idle.
    notices.push(
      ...p.handle({
        type: 'result',
        uploaded: 200,
        bytes: 200 * 10 * 1024 * 1024,
        alreadyThere: 12,
        failed: 0,
      }),
    );
    expect(notices).toEqual([]);
    expect(p.handle({ type: 'state', state: 'idle', message: null })).toEqual([
      {
        kind: 'synced',
        title: 'Sync finished',
        body: '212 files synced (2.0 GB uploaded); 12 were already on the server.',
      },
    ]);
    // Nothing new: going idle again says nothing.
    expect(p.handle({ type: 'state', state: 'idle', message: null })).toEqual([]);
  });

  it('reports rejected files as one problem notice', () => {
    const p = new NotificationPolicy();
    p.handle({ type: 'result', uploaded: 1, bytes: 2048, alreadyThere: 0, failed: 3 });
    const out = p.handle({ type: 'state', state: 'idle', message: null });
    expect(out.map((n) => n.kind)).toEqual(['synced', 'problem']);
    expect(out[1]!.title).toBe('3 files not uploaded');
  });

  it('rate-limits summaries: a folder filling file by file gives one summary, flushed when due', () => {
    const c = clock();
    const p = new NotificationPolicy({ now: c.now, summaryCooldownMs: 120_000 });
    p.handle({ type: 'result', uploaded: 1, bytes: 1, alreadyThere: 0, failed: 0 });
    expect(p.handle({ type: 'state', state: 'idle', message: null })).toHaveLength(1);
    for (let i = 0; i < 10; i++) {
      c.advance(5_000);
      p.handle({ type: 'state', state: 'syncing', message: null });
      p.handle({ type: 'result', uploaded: 1, bytes: 1, alreadyThere: 0, failed: 0 });
      expect(p.handle({ type: 'state', state: 'idle', message: null })).toEqual([]);
    }
    expect(p.dueAt).toBe(1_000_000 + 120_000);
    expect(p.flushDue()).toEqual([]); // not yet
    c.advance(120_000);
    const [n] = p.flushDue();
    expect(n!.body).toBe('10 files synced (10 bytes uploaded).');
    expect(p.dueAt).toBeNull();
    expect(p.flushDue()).toEqual([]);
  });

  it('says "sign in" once per expiry, not at every engine retry', () => {
    const p = new NotificationPolicy();
    const said = p.handle({
      type: 'state',
      state: 'auth-required',
      message: 'The server no longer accepts your sign-in.',
    });
    expect(said).toEqual([
      { kind: 'sign-in', title: 'Sign in needed', body: 'The server no longer accepts your sign-in.' },
    ]);
    expect(p.handle({ type: 'state', state: 'auth-required', message: 'again' })).toEqual([]);
    expect(p.handle({ type: 'state', state: 'paused', message: null })).toEqual([]);
    expect(p.handle({ type: 'state', state: 'auth-required', message: 'again' })).toEqual([]);
    // Signed in again and syncing: a later expiry is news again.
    p.handle({ type: 'state', state: 'syncing', message: null });
    expect(p.handle({ type: 'state', state: 'auth-required', message: null })).toHaveLength(1);
  });

  it('says once why syncing stopped (disk full) and what to do, again after a resume', () => {
    const p = new NotificationPolicy();
    const message =
      'Disk full: the disk holding /home/crew/.config/drone-media-sync is full. Free space on it, then press Resume; nothing is lost.';
    expect(p.handle({ type: 'state', state: 'halted', message, halt: 'disk-full' })).toEqual([
      { kind: 'halted', title: 'Disk full: syncing stopped', body: message },
    ]);
    expect(p.handle({ type: 'state', state: 'halted', message, halt: 'disk-full' })).toEqual([]);
    p.handle({ type: 'state', state: 'idle', message: null });
    expect(
      p.handle({
        type: 'state',
        state: 'halted',
        message: 'The upload queue cannot be written.',
        halt: 'database',
      }),
    ).toEqual([{ kind: 'halted', title: 'Syncing stopped', body: 'The upload queue cannot be written.' }]);
  });

  it('says "safe to format" once per verdict, and why a card is not safe', () => {
    const p = new NotificationPolicy();
    const safe = {
      type: 'offload' as const,
      sourceId: 'card:1',
      label: 'M30T_CARD',
      safe: true,
      message: 'M30T_CARD: 212 files verified in workspace ws-1 — safe to format',
      reasons: [],
    };
    expect(p.handle(safe)).toEqual([
      { kind: 'safe', title: 'M30T_CARD: safe to format', body: safe.message },
    ]);
    expect(p.handle(safe)).toEqual([]);
    const unsafe = {
      ...safe,
      safe: false,
      message: 'M30T_CARD: not safe to format yet — 1 flight incomplete',
      reasons: ['Flight DJI_1 is incomplete: 1 photo missing.'],
    };
    expect(p.handle(unsafe)).toEqual([
      {
        kind: 'problem',
        title: 'M30T_CARD: not safe to format yet',
        body: 'Flight DJI_1 is incomplete: 1 photo missing.',
      },
    ]);
  });

  it('says "locally safe: you can take the card out" once, when the copies are verified; not when they are not', () => {
    const p = new NotificationPolicy();
    const local = {
      type: 'local' as const,
      sourceId: 'card:1',
      label: 'M3E_CARD',
      safe: false,
      message: 'M3E_CARD: not safe to format from the copies yet — 1,200 files of 1,214 verified on SSD',
    };
    expect(p.handle(local)).toEqual([]);
    const safe = {
      ...local,
      safe: true,
      message: 'M3E_CARD: 1,214 files copied and verified on SSD and T7_BACKUP — safe to format',
    };
    expect(p.handle(safe)).toEqual([
      {
        kind: 'locally-safe',
        title: 'M3E_CARD is locally safe: you can take the card out',
        body: safe.message,
      },
    ]);
    expect(p.handle(safe)).toEqual([]);
    // Another card is news of its own.
    expect(p.handle({ ...safe, sourceId: 'card:2', label: 'M30T_CARD' })).toHaveLength(1);
  });

  it("says a card's advisory line (issue 32) once per insertion, with its first verdict; it never makes a card unsafe", () => {
    const p = new NotificationPolicy();
    const advisory =
      'Flight 2 of 4: 38 of 212 photos look unusable (lens cap?), first at 10:42:13 — look before you leave';
    const added = { type: 'source-added' as const, sourceId: 'card:1', label: 'M3E_CARD', isCard: true };
    const local = {
      type: 'local' as const,
      sourceId: 'card:1',
      label: 'M3E_CARD',
      safe: true,
      message: 'M3E_CARD: 1,214 files copied and verified on SSD — safe to format',
      advisory,
    };
    const offload = {
      type: 'offload' as const,
      sourceId: 'card:1',
      label: 'M3E_CARD',
      safe: true,
      message: 'M3E_CARD: 1,214 files verified in workspace ws-1 — safe to format',
      reasons: [],
      advisory,
    };
    p.handle(added);
    // Locally safe first: the crew may leave now, so the advisory comes with it — and still "safe".
    expect(p.handle(local)).toEqual([
      {
        kind: 'locally-safe',
        title: 'M3E_CARD is locally safe: you can take the card out',
        body: `${local.message}\n${advisory}`,
      },
    ]);
    // The workspace verdict of the same insertion: said, the advisory not again.
    expect(p.handle(offload)).toEqual([
      { kind: 'safe', title: 'M3E_CARD: safe to format', body: offload.message },
    ]);
    // A later verdict of the same insertion (a retry made it unsafe): not again either.
    expect(p.handle({ ...offload, safe: false, reasons: ['1 file failed.'] })).toEqual([
      { kind: 'problem', title: 'M3E_CARD: not safe to format yet', body: '1 file failed.' },
    ]);
    // The card inserted again: a new card event, said again with its verdict.
    p.handle({ type: 'source-removed', sourceId: 'card:1' });
    p.handle(added);
    expect(p.handle({ ...offload, message: `${offload.message}.` })).toEqual([
      { kind: 'safe', title: 'M3E_CARD: safe to format', body: `${offload.message}.\n${advisory}` },
    ]);
    // Without an advisory line, the body is the verdict alone.
    expect(p.handle({ ...offload, sourceId: 'card:2', advisory: null })[0]?.body).toBe(offload.message);
  });

  it('says a destination that stopped for a card once, with its reason', () => {
    const p = new NotificationPolicy();
    const stop = {
      type: 'destination-stopped' as const,
      sourceId: 'card:1',
      label: 'M3E_CARD',
      destination: 'T7_BACKUP',
      message:
        'T7_BACKUP: 41 GB free, the card needs 58 GB. Nothing was written there; free space (or choose another destination), then sync again.',
    };
    expect(p.handle(stop)).toEqual([
      { kind: 'problem', title: 'M3E_CARD: not copied to T7_BACKUP', body: stop.message },
    ]);
    expect(p.handle(stop)).toEqual([]);
  });

  it("says the link's question once per network, so a crew with the window closed can answer it", () => {
    const p = new NotificationPolicy();
    const ask = {
      type: 'link-question' as const,
      network: 'wwan0 10.64.0.1 ?',
      text: 'Upload 41.0 GB of photos and videos over this metered network?',
    };
    expect(p.handle(ask)).toEqual([
      {
        kind: 'link',
        title: 'Upload 41.0 GB of photos and videos over this metered network?',
        body: 'Open Drone Media Sync to answer (Yes for this network, Not now, Never on this network). RTK files and logs go meanwhile.',
      },
    ]);
    expect(p.handle(ask)).toEqual([]);
    expect(p.handle({ ...ask, network: 'wlan0 192.168.43.1 02:11:22:33:44:55' })).toHaveLength(1);
  });

  it('formats sizes', () => {
    expect(formatBytes(0)).toBe('0 bytes');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(250 * 1024 * 1024)).toBe('250 MB');
    expect(formatBytes(3.4 * 1024 ** 3)).toBe('3.4 GB');
  });
});
