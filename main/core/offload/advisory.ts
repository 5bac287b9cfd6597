/**
 * The verdict's third line, advisory only: which flight of the card has
 * photos that look unusable (or a camera clock that is off), how many, and
 * from when, while a re-fly is still possible. It never changes "safe to
 * format": nothing is deleted or held back.
 */
import { count } from './plain.js';
import { likelyCause } from './frames.js';
import type { FlightCompleteness } from './types.js';

export type AdvisoryFlight = Partial<Pick<FlightCompleteness, 'name' | 'photos' | 'frames' | 'clock'>>;

/** "10:42:13" from "2024-05-06T10:42:13+02:00" (the camera's own clock, as the crew reads it). */
const clockTime = (capturedAt: string | null): string =>
  /T(\d{2}:\d{2}:\d{2})/.exec(capturedAt ?? '')?.[1] ?? '';

/** The advisory line, or null when no flight has anything to look at. */
export function flightAdvisory(flights: readonly AdvisoryFlight[]): string | null {
  const of = flights.length;
  const scored = flights
    .map((f, i) => ({
      f,
      n: i + 1,
      bad: (f.frames ?? []).filter((x) => x.unusable),
      clock: f.clock?.findings ?? [],
    }))
    .filter((x) => x.bad.length > 0 || x.clock.length > 0);
  if (scored.length === 0) return null;
  const worst = [...scored].sort((a, b) => b.bad.length - a.bad.length || a.n - b.n)[0]!;
  const head = of > 1 ? `Flight ${worst.n} of ${of}` : `Flight ${worst.f.name ?? ''}`.trim();
  const parts: string[] = [];
  if (worst.bad.length > 0) {
    const first = worst.bad[0]!;
    const at = clockTime(first.capturedAt);
    parts.push(
      `${worst.bad.length} of ${count(worst.f.photos ?? worst.bad.length, 'photo')} look unusable (${likelyCause(worst.bad)})${at ? `, first at ${at}` : ''}`,
    );
  }
  const c = worst.clock[0];
  // The finding's first clause: "camera clock is 1 h 00 min 03 s ahead of GPS time (UTC+02:00) on 1 photo (…)".
  if (c) parts.push(c.message.slice(0, c.message.indexOf('): ') + 1).replace(/^Camera/, 'camera'));
  const others = scored.length - 1;
  return `${head}: ${parts.join('; ')}${others > 0 ? ` (and ${count(others, 'other flight')})` : ''} — look before you leave`;
}
