import { describe, expect, it } from 'vitest';
import { Slots } from './s3-put.js';

describe('Slots', () => {
  it('lets `size` holders in, the others in their order; one that gives up leaves the line', async () => {
    const slots = new Slots(1);
    const first = await slots.take();
    const events: string[] = [];
    const ac = new AbortController();
    const second = slots.take(ac.signal).then(
      () => events.push('second'),
      (err: Error) => events.push(`second ${err.name}`),
    );
    const third = slots.take().then((release) => {
      events.push('third');
      return release;
    });
    ac.abort();
    await second;
    expect(events).toEqual(['second AbortError']);
    first();
    first(); // given back once only
    const release = await third;
    expect(events).toEqual(['second AbortError', 'third']);
    // The slot is held by the third: a fourth waits until it is given back.
    let fourth = false;
    const waiting = slots.take().then(() => (fourth = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(fourth).toBe(false);
    release();
    await waiting;
    expect(fourth).toBe(true);
  });
});
