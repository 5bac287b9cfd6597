/**
 * A flight in a few figures for the crew: when (first and last file), how
 * high (height above take-off of its photos), how much ground (the area of
 * the convex hull of the photo positions) and which exposure log (MRK) it
 * matches. Pure.
 */
import { timeOfMedia } from './split.js';
import type { Exposure, FlightInput, FlightSummary, LatLng } from './types.js';

/** Area of the convex hull of points, m², on a local flat projection (fine over a few km). */
export function hullAreaM2(points: readonly LatLng[]): number {
  if (points.length < 3) return 0;
  const lat0 = points.reduce((n, p) => n + p.lat, 0) / points.length;
  const k = (Math.PI / 180) * 6_371_000;
  const xy = points
    .map((p) => ({ x: p.lng * k * Math.cos((lat0 * Math.PI) / 180), y: p.lat * k }))
    .sort((a, b) => a.x - b.x || a.y - b.y);
  const cross = (o: { x: number; y: number }, a: { x: number; y: number }, b: { x: number; y: number }) =>
    (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
  // Andrew's monotone chain.
  const half = (list: typeof xy) => {
    const h: typeof xy = [];
    for (const p of list) {
      while (h.length >= 2 && cross(h[h.length - 2]!, h[h.length - 1]!, p) <= 0) h.pop();
      h.push(p);
    }
    h.pop();
    return h;
  };
  const hull = [...half(xy), ...half([...xy].reverse())];
  let twice = 0;
  for (let i = 0; i < hull.length; i++) {
    const a = hull[i]!;
    const b = hull[(i + 1) % hull.length]!;
    twice += a.x * b.y - b.x * a.y;
  }
  return Math.abs(twice) / 2;
}

export function flightSummary(input: FlightInput, exposures: readonly Exposure[]): FlightSummary {
  const times = input.media.map(timeOfMedia).filter((t): t is number => t !== null);
  const heights = input.media
    .map((m) => m.relativeAltitude)
    .filter((h): h is number => typeof h === 'number' && Number.isFinite(h));
  const places = exposures.map((e) => e.position).filter((p): p is LatLng => p !== null);
  const iso = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
  const area = hullAreaM2(places);
  return {
    start: times.length ? iso(Math.min(...times)) : null,
    end: times.length ? iso(Math.max(...times)) : null,
    heightMin: heights.length ? Math.min(...heights) : null,
    heightMax: heights.length ? Math.max(...heights) : null,
    areaHectares: places.length >= 3 ? Math.round(area / 100) / 100 : null,
    mrk: input.mrk.filter((m) => m.entries.length > 0).map((m) => m.relPath),
  };
}
