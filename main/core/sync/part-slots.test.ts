/**
 * The part slots alone (pure scheduling, no network; the engine tests in
 * test/sync/lanes.test.ts and stall.test.ts run them against the real
 * service and bucket): who goes next, how much goes at once, and the gate.
 */
import { describe, expect, it } from 'vitest';
import type { LaneName } from '../queue/lanes.js';
import type { PartGate } from './part-gate.js';
import { LEAD_SECONDS, MAX_BYTES_IN_FLIGHT, PartSlots, type PartTicket } from './part-slots.js';

const MiB = 1024 * 1024;

describe('the part slots', () => {
  it('hand the next slot to the best lane waiting, then in arrival order, never cancelling one in flight', async () => {
    // 1 MiB/s and 8 MiB parts: one part in flight; each part takes 8 s on the clock.
    let clock = 0;
    const slots = new PartSlots({ max: 12, partBytes: 8 * MiB, limitBytesPerSecond: MiB, now: () => clock });
    expect(slots.width).toBe(1);
    const order: string[] = [];
    const tickets = new Map<string, PartTicket>();
    const take = (name: string, lane: LaneName): void =>
      void slots.take(lane, 8 * MiB).then((t) => {
        order.push(name);
        tickets.set(name, t);
      });
    const tick = () => new Promise((r) => setImmediate(r));
    take('video 1', 'videos');
    await tick();
    take('video 2', 'videos');
    take('photo', 'photos');
    take('log', 'first');
    take('preview', 'previews');
    take('rtk', 'first');
    await tick();
    expect(order).toEqual(['video 1']);
    // One at a time: the next slot only once the part in flight is answered.
    for (let i = 0; i < 5; i++) {
      clock += 8000;
      tickets.get(order.at(-1) as string)?.done(8 * MiB);
      await tick();
      expect(order).toHaveLength(i + 2);
    }
    expect(order).toEqual(['video 1', 'log', 'rtk', 'photo', 'video 2', 'preview']);
    // The measured rate, 1 MiB/s, keeps one part in flight.
    expect(slots.rate).toBe(MiB);
    expect(slots.width).toBe(1);
    slots.close();
  });

  it('let small files go beside a big part, within the bytes that fill the link', async () => {
    const slots = new PartSlots({ max: 12, partBytes: 8 * MiB, limitBytesPerSecond: 2 * MiB });
    const part = await slots.take('videos', 8 * MiB);
    const small = await Promise.all([slots.take('first', 40_000), slots.take('first', 40_000)]);
    expect(slots.inFlight).toBe(3);
    let second = false;
    void slots.take('videos', 8 * MiB).then(() => (second = true));
    await new Promise((r) => setImmediate(r));
    // 16 MiB would pass 2 MiB/s x 8 s: the second part waits for the first.
    expect(second).toBe(false);
    part.done(8 * MiB);
    await new Promise((r) => setImmediate(r));
    expect(second).toBe(true);
    for (const s of small) s.done(40_000);
    slots.close();
  });

  it('start the next part when the one in flight is nearly sent, never more than one beyond the link', async () => {
    // 1 MiB/s (the limit, until measured) and 8 MiB parts: one part fills the link (8 s).
    let clock = 0;
    const slots = new PartSlots({ max: 12, partBytes: 8 * MiB, limitBytesPerSecond: MiB, now: () => clock });
    const granted: PartTicket[] = [];
    const take = (lane: LaneName): void => void slots.take(lane, 8 * MiB).then((t) => granted.push(t));
    const tick = () => new Promise((r) => setImmediate(r));
    for (let i = 0; i < 4; i++) take('videos');
    await tick();
    expect(granted).toHaveLength(1);
    // 5 s in: 3 s of the part left, more than the lead; nothing new starts.
    clock = 5000;
    slots.update({});
    await tick();
    expect(granted).toHaveLength(1);
    // 1.5 s left: the next part starts, so the link does not fall idle at the boundary...
    clock = 8000 - LEAD_SECONDS * 1000;
    slots.update({});
    await tick();
    expect(granted).toHaveLength(2);
    // ...and no third, however long the first takes.
    clock = 30_000;
    slots.update({});
    await tick();
    expect(granted).toHaveLength(2);
    // The first answered: the third part leads only near the second's end (it is due at 6.5 + 8 s).
    granted[0]?.done(8 * MiB);
    await tick();
    expect(granted).toHaveLength(2);
    slots.close();
  });

  it('keep no more bodies in memory than MAX_BYTES_IN_FLIGHT (and the lead part) on a fast link; small files go many at once', async () => {
    // Loopback or a LAN: the rate would allow all 12 parts (96 MiB of bodies) at once.
    const slots = new PartSlots({ max: 12, partBytes: 8 * MiB, limitBytesPerSecond: 1024 * MiB });
    const granted: PartTicket[] = [];
    for (let i = 0; i < 12; i++) void slots.take('videos', 8 * MiB).then((t) => granted.push(t));
    await new Promise((r) => setImmediate(r));
    const parts = Math.floor(MAX_BYTES_IN_FLIGHT / (8 * MiB));
    expect(granted).toHaveLength(parts + 1);
    expect(parts + 1).toBeLessThan(12);
    // One answered, one more goes: the bucket is never left without a body to take.
    granted[0]?.done(8 * MiB);
    await new Promise((r) => setImmediate(r));
    expect(granted).toHaveLength(parts + 2);
    for (const t of granted) t.release();
    slots.close();
    // Small files are bounded by the count, not by these bytes.
    const photos = new PartSlots({ max: 12, partBytes: 8 * MiB, limitBytesPerSecond: 1024 * MiB });
    const small = await Promise.all(Array.from({ length: 12 }, () => photos.take('photos', 64 * 1024)));
    expect(photos.inFlight).toBe(12);
    for (const s of small) s.done(64 * 1024);
    photos.close();
  });

  it('measure the link, not the parts: a part that shared the link half its time counts that time half', async () => {
    // Two parts of 8 MiB on a 1 MiB/s link: alone 4 s, then side by side 8 s (each at 0.5 MiB/s), then alone 4 s.
    let clock = 0;
    const slots = new PartSlots({ max: 12, partBytes: 8 * MiB, now: () => clock });
    const a = await slots.take('videos', 8 * MiB);
    clock = 4000;
    const b = await slots.take('videos', 8 * MiB);
    clock = 12_000;
    a.done(8 * MiB); // 4 MiB alone + 4 MiB at half: 8 MiB in 4 + 8/2 = 8 s of the link
    expect(slots.rate).toBe(MiB);
    clock = 16_000;
    b.done(8 * MiB);
    expect(slots.rate).toBe(MiB);
    slots.close();
  });

  it('ask the gate before every part: a held lane waits without a slot, others pass, a change wakes it', async () => {
    let metered = true;
    const listeners: Array<() => void> = [];
    const sent: Array<[LaneName, number]> = [];
    const gate: PartGate = {
      mayStart: (lane) => !metered || lane === 'first',
      sent: (lane, bytes) => sent.push([lane, bytes]),
      subscribe: (fn) => {
        listeners.push(fn);
        return () => listeners.splice(listeners.indexOf(fn), 1);
      },
    };
    const slots = new PartSlots({ max: 4, partBytes: 8 * MiB, gate });
    let video = false;
    const held = slots.take('videos', 8 * MiB).then((t) => {
      video = true;
      return t;
    });
    const log = await slots.take('first', 30_000);
    await new Promise((r) => setImmediate(r));
    expect(video).toBe(false);
    log.done(30_000);
    metered = false;
    for (const l of listeners) l();
    (await held).done(8 * MiB);
    expect(video).toBe(true);
    expect(sent).toEqual([
      ['first', 30_000],
      ['videos', 8 * MiB],
    ]);
    slots.close();
    expect(listeners).toHaveLength(0);
  });

  it('say when the gate alone holds what waits (a one-shot run ends on it): not while a part is on the wire', async () => {
    let metered = true;
    const gate: PartGate = { mayStart: (lane) => !metered || lane === 'first', sent: () => undefined };
    const slots = new PartSlots({ max: 4, partBytes: 8 * MiB, gate });
    expect(slots.heldByGate()).toBeNull(); // nothing waits
    const log = await slots.take('first', 30_000);
    const held = slots.take('videos', 8 * MiB);
    await new Promise((r) => setImmediate(r));
    expect(slots.heldByGate()).toBeNull(); // the log's part is on the wire
    log.done(30_000);
    expect([...(slots.heldByGate() ?? [])]).toEqual(['videos']);
    // The gate opened meanwhile: asked again first, the part goes; nothing is held.
    metered = false;
    expect(slots.heldByGate()).toBeNull();
    (await held).done(8 * MiB);
    slots.close();
  });
});
