/**
 * What a flight map shows, shared by the window's map (renderer/src/flight-map.tsx)
 * and the printable report's static map (main/core/offload/report.ts): the
 * point states with their words and colours, and the little geometry a
 * static map needs (fit the points, a scale bar of round length).
 * Plain data and pure functions only: no Node, no DOM.
 */

export type PointState =
  'done' | 'on-its-way' | 'failed' | 'missing' | 'flagged' | 'rtk-float' | 'rtk-single';

/** Legend order, words and colours (distinct for the common colour-vision deficiencies, with a shape for missing). */
export const POINT_STYLES: ReadonlyArray<{ state: PointState; label: string; colour: string }> = [
  { state: 'done', label: 'Done', colour: '#1a7f37' },
  { state: 'on-its-way', label: 'On its way', colour: '#0969da' },
  { state: 'failed', label: 'Failed', colour: '#cf222e' },
  { state: 'missing', label: 'Missing (in the MRK, no photo)', colour: '#8250df' },
  { state: 'flagged', label: 'Probably unusable (see why)', colour: '#24292f' },
  { state: 'rtk-float', label: 'RTK float fix', colour: '#d4a72c' },
  { state: 'rtk-single', label: 'RTK single / no fix', colour: '#e16f24' },
];

export function pointStyle(state: PointState): { label: string; colour: string } {
  return POINT_STYLES.find((s) => s.state === state) ?? { label: state, colour: '#57606a' };
}

export interface LatLngView {
  lat: number;
  lng: number;
}

/** One exposure on the map. */
export interface FlightPointView extends LatLngView {
  /** The exposure number, null for a photo without one. */
  index: number | null;
  /** Gimbal yaw, degrees clockwise from north, or null. */
  gimbalYaw: number | null;
  state: PointState;
  /** File names of the exposure's photos (empty when missing). */
  files: string[];
  /** What is wrong with it, in plain words, or null. */
  problem: string | null;
}

const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;

export interface Fit {
  project(p: LatLngView): { x: number; y: number };
  metresPerPixel: number;
}

/**
 * Places points in a width x height box with `pad` pixels around, north up,
 * the same scale both ways (a local equirectangular projection: exact enough
 * for a flight of a few kilometres). One point or none: 1 m per pixel, centred.
 */
export function fitPoints(points: readonly LatLngView[], width: number, height: number, pad: number): Fit {
  const lat0 = points.length > 0 ? points.reduce((s, p) => s + p.lat, 0) / points.length : 0;
  const k = Math.cos(lat0 * RAD);
  const xy = (p: LatLngView) => ({ x: p.lng * RAD * EARTH_RADIUS_M * k, y: p.lat * RAD * EARTH_RADIUS_M });
  const all = points.map(xy);
  const minX = Math.min(...all.map((p) => p.x));
  const maxX = Math.max(...all.map((p) => p.x));
  const minY = Math.min(...all.map((p) => p.y));
  const maxY = Math.max(...all.map((p) => p.y));
  const spanX = all.length > 0 ? maxX - minX : 0;
  const spanY = all.length > 0 ? maxY - minY : 0;
  const mpp =
    Math.max(spanX / Math.max(1, width - 2 * pad), spanY / Math.max(1, height - 2 * pad), 0.05) || 1;
  const cx = all.length > 0 ? (minX + maxX) / 2 : 0;
  const cy = all.length > 0 ? (minY + maxY) / 2 : 0;
  return {
    metresPerPixel: mpp,
    project: (p) => {
      const q = xy(p);
      return { x: width / 2 + (q.x - cx) / mpp, y: height / 2 - (q.y - cy) / mpp };
    },
  };
}

/** The longest round length (1, 2 or 5 x 10^n m) that fits in maxPx. */
export function scaleBar(
  metresPerPixel: number,
  maxPx: number,
): { metres: number; px: number; label: string } {
  const max = metresPerPixel * maxPx;
  let metres = 1;
  for (let p = 10 ** Math.floor(Math.log10(Math.max(max, 0.01))); ; p *= 10) {
    const next = [1, 2, 5].map((m) => m * p).filter((m) => m <= max);
    if (next.length === 0) break;
    metres = next[next.length - 1]!;
    if (p * 10 > max) break;
  }
  return {
    metres,
    px: metres / metresPerPixel,
    label: metres >= 1000 ? `${metres / 1000} km` : `${metres} m`,
  };
}

/** A flight's figures as offload/summary.ts gives them (plain data, shared by the CLI and the window). */
export interface FlightSummaryFigures {
  start: string | null;
  end: string | null;
  heightMin: number | null;
  heightMax: number | null;
  areaHectares: number | null;
  mrk: string[];
}

/** ["08:15:12–08:15:34 UTC", "3–80 m above take-off", "0.43 ha", "MRK x_Timestamp.MRK"]: what is known. */
export function flightSummaryWords(s: FlightSummaryFigures): string[] {
  const range = (a: string, b: string): string => (a === b ? a : `${a}–${b}`);
  const name = (p: string): string => p.split('/').pop() ?? p;
  return [
    s.start && s.end ? `${range(s.start.slice(11, 19), s.end.slice(11, 19))} UTC` : '',
    s.heightMin !== null && s.heightMax !== null
      ? `${range(String(Math.round(s.heightMin)), String(Math.round(s.heightMax)))} m above take-off`
      : '',
    s.areaHectares !== null ? `${s.areaHectares} ha` : '',
    s.mrk.length ? `MRK ${s.mrk.map(name).join(', ')}` : '',
  ].filter(Boolean);
}
