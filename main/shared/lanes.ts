/**
 * Lanes as the crew sees them: what is left in each lane and when it should
 * be in the workspace at the current rate ("RTK files and logs: in the
 * workspace in about 1 min; photos: about 2 h 10 min; videos: about 9 h").
 * Shared by the engine (main/core/queue/lanes.ts keeps each file's lane),
 * the CLI and the window.
 */
import { formatBytes } from './sizes.js';

/** The lanes a class of file may be set to (the setting `lanes`), first first. */
export const CREW_LANE_NAMES = ['first', 'photos', 'videos', 'previews'] as const;

/**
 * The lanes, first first. 'flagged' is last and not a setting: photos the
 * frame checks flagged, when the crew leaves them out of a metered upload
 * (issue 32); the link holds it on a metered network, even after a yes.
 */
export const LANE_NAMES = [...CREW_LANE_NAMES, 'flagged'] as const;
export type LaneName = (typeof LANE_NAMES)[number];

/** What the crew reads for each lane. */
export const LANE_LABELS: Readonly<Record<LaneName, string>> = {
  first: 'RTK files and logs',
  photos: 'photos',
  videos: 'videos',
  previews: 'previews and MISC',
  flagged: 'flagged photos',
};

/** "12 flagged photos wait for an unmetered network; they are on the card and the copies". */
export function flaggedWaitLine(files: number, copies: boolean): string {
  const n = files === 1 ? '1 flagged photo waits' : `${files} flagged photos wait`;
  return `${n} for an unmetered network; ${files === 1 ? 'it is' : 'they are'} on the card${copies ? ' and the copies' : ''}`;
}

/** Files and bytes still to send in one lane. */
export interface LaneLeft {
  lane: LaneName;
  files: number;
  bytes: number;
}

export interface LaneEta extends LaneLeft {
  label: string;
  /** Seconds until the lane is in the workspace at the current rate; null when no rate is known. */
  seconds: number | null;
}

/**
 * When each lane should be done: lanes go in order, so a lane is done once
 * it and every lane before it are sent. Lanes with nothing left are left out.
 */
export function laneEtas(left: readonly LaneLeft[], bytesPerSecond: number): LaneEta[] {
  const out: LaneEta[] = [];
  let before = 0;
  for (const lane of LANE_NAMES) {
    const l = left.find((x) => x.lane === lane);
    if (!l || l.files === 0) continue;
    before += l.bytes;
    out.push({
      ...l,
      label: LANE_LABELS[lane],
      seconds: bytesPerSecond > 0 ? Math.ceil(before / bytesPerSecond) : null,
    });
  }
  return out;
}

/** "about 1 min", "about 2 h 10 min", "about 9 h" (rounded as a person would say it). */
export function aboutDuration(seconds: number): string {
  if (seconds < 60) return 'less than a minute';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `about ${minutes} min`;
  const h = Math.floor(minutes / 60);
  // Past 5 hours, whole hours; below, to 10 minutes.
  if (h >= 5) return `about ${Math.round(minutes / 60)} h`;
  const m = Math.round((minutes % 60) / 10) * 10;
  return m === 0 ? `about ${h} h` : m === 60 ? `about ${h + 1} h` : `about ${h} h ${m} min`;
}

/**
 * One line for the crew: "RTK files and logs: in the workspace in about 1
 * min; photos: about 2 h 10 min; videos: about 9 h". Without a rate: what is
 * left ("photos: 212 files, 3.4 GB left"). Empty when nothing is left.
 */
export function lanesLine(etas: readonly LaneEta[], copies = false): string {
  return etas
    .map((e, i) => {
      // Held by the link on a metered network, whatever the rate: said as such (issue 32).
      if (e.lane === 'flagged') return flaggedWaitLine(e.files, copies);
      if (e.seconds === null)
        return `${e.label}: ${e.files === 1 ? '1 file' : `${e.files} files`}, ${formatBytes(e.bytes)} left`;
      return `${e.label}: ${i === 0 ? 'in the workspace in ' : ''}${aboutDuration(e.seconds)}`;
    })
    .join('; ');
}
