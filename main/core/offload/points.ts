/**
 * The map points of a flight: one per exposure that has a position (the
 * photo's, else the MRK's), with the state the crew sees first. Order of
 * precedence, worst first: missing (in the MRK, no photo) > failed > on its
 * way (pending or waiting for the card) > RTK single/none > RTK float > done;
 * a photo that looks unusable (frames.ts) is 'flagged' after failed, and the
 * reasons of every flagged or hinted frame are added to the point's words.
 * Used by the report's static map and by main for the window's flight view.
 */
import type { FlightPointView, PointState } from '../../shared/flight-map.js';
import { baseName, listOf } from './plain.js';
import type { FileQueueState, FlightCompleteness } from './types.js';

export type FileStates = Readonly<
  Record<string, { state: FileQueueState; error?: string | null } | undefined>
>;

export function flightPoints(flight: FlightCompleteness, files: FileStates): FlightPointView[] {
  const points: FlightPointView[] = [];
  const frameOf = new Map((flight.frames ?? []).map((f) => [f.relPath, f]));
  for (const e of flight.exposures) {
    if (!e.position) continue;
    const states = e.photos.map((p) => files[p]);
    const failed = e.photos.filter((p) => files[p]?.state === 'failed');
    const waiting = states.some((s) => s?.state === 'waiting');
    const moving = states.some((s) => s?.state === 'pending' || s?.state === 'waiting');
    const rtk = e.mrk?.rtk;
    let state: PointState = 'done';
    let problem: string | null = null;
    if (e.photos.length === 0) {
      state = 'missing';
      problem = `Exposure ${e.index} is in the exposure log but the card has no photo for it.`;
    } else if (failed.length > 0) {
      state = 'failed';
      const why = failed.map((p) => files[p]?.error).find(Boolean);
      problem = `Upload failed for ${listOf(failed.map(baseName))}${why ? `: ${why}` : '.'}`;
    } else if (e.photos.some((p) => frameOf.get(p)?.unusable)) {
      state = 'flagged';
    } else if (moving) {
      state = 'on-its-way';
      problem = waiting ? 'Waiting for the card: insert it again.' : null;
    } else if (rtk === 'single' || rtk === 'none') {
      state = 'rtk-single';
      problem = `No RTK fix (status ${e.mrk?.status}): metre accuracy.`;
    } else if (rtk === 'float') {
      state = 'rtk-float';
      problem = `RTK float fix (status ${e.mrk?.status}): decimetre accuracy.`;
    }
    // Why a frame was flagged (or hinted at), after its upload state.
    const why = e.photos.flatMap((p) => frameOf.get(p)?.reasons.map((r) => r.message) ?? []);
    if (why.length > 0) problem = [problem, `${why.join('; ')}.`].filter(Boolean).join(' ');
    if (flight.extraIndexes.includes(e.index)) {
      problem = [problem, 'No line in the exposure log: no PPK position.'].filter(Boolean).join(' ');
    }
    points.push({
      index: e.index,
      lat: e.position.lat,
      lng: e.position.lng,
      gimbalYaw: e.gimbalYaw,
      state,
      files: e.photos.map(baseName),
      problem,
    });
  }
  return points;
}
