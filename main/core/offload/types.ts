/**
 * The plain data the offload modules take and give. The lead fills the inputs
 * from the queue and the card scan; nothing here touches a database, a file
 * or the network.
 */
import type { LocalVerdict } from '../copies/locally-safe.js';
import type { FileKind } from '../media/discover.js';
import type { MrkEntry, MrkProblem, RtkClass } from '../media/mrk.js';
import type { RtkKind } from '../media/rtk-files.js';
import type { FrameFacts } from '../media/frame.js';
import type { FlightSummaryFigures } from '../../shared/flight-map.js';

export interface LatLng {
  lat: number;
  lng: number;
}

// ---------- flight completeness (flight.ts) ----------

/** One media file of a flight folder as found on the card. */
export interface FlightMediaInput {
  /** Relative to the card root, "/"-separated. */
  relPath: string;
  /** The callback's created_time ("2024-05-06T10:15:12+02:00"); without offset it is read as UTC. */
  capturedAt?: string | null;
  position?: LatLng | null;
  gimbalYaw?: number | null;
  /** Height above the take-off point (XMP RelativeAltitude), metres. */
  relativeAltitude?: number | null;
  /** What the photo says of its own usefulness (media/frame.ts). */
  frame?: FrameFacts | null;
}

export interface FlightRtkFileInput {
  relPath: string;
  kind: RtkKind;
}

/** One parsed MRK file of the folder (parseMrk's result and where it came from). */
export interface FlightMrkInput {
  relPath: string;
  entries: MrkEntry[];
  problems: MrkProblem[];
}

export interface WaylineRef {
  id: string;
  name: string;
  start: LatLng | null;
}

export interface FlightInput {
  /** The folder relative to the card root, e.g. "DCIM/DJI_202405061012_003_Quarry". */
  folder: string;
  media: FlightMediaInput[];
  rtkFiles: FlightRtkFileInput[];
  mrk: FlightMrkInput[];
  wayline?: WaylineRef | null;
  /** The caller knows this aircraft flies RTK (e.g. its photos carry an RTK flag): RTK files are expected. */
  expectRtk?: boolean;
  /** One of several flights found in one folder (split.ts): which, of how many. */
  part?: { n: number; of: number } | null;
  /** The whole folder's files were taken further apart than one flight goes (split.ts says it on its first flight). */
  folderSpread?: string | null;
  /** The crew's lowest useful height above take-off, metres: photos below it are flagged. */
  minHeight?: number | null;
}

/**
 * Time span (first and last file, UTC: GNSS time when the photos carry it),
 * height range above take-off, area of the hull of the photo positions
 * (hectares) and the exposure logs (MRK) of a flight (summary.ts).
 */
export type FlightSummary = FlightSummaryFigures;

export type FrameReason =
  | 'black'
  | 'blown-out'
  | 'gimbal'
  | 'too-low'
  | 'take-off-landing'
  | 'zero-gps'
  | 'no-gps'
  | 'rtk'
  | 'blurry'
  | 'clock';

/** A photo that is probably useless (or, for hints, worth a look), with why. Nothing is deleted. */
export interface FlaggedFrame {
  relPath: string;
  index: number | null;
  /** Capture time as the file says (created_time). */
  capturedAt: string | null;
  position: LatLng | null;
  reasons: Array<{ code: FrameReason; message: string }>;
  /** At least one reason makes the photo unusable (not only a hint: sharpness, RTK, clock). */
  unusable: boolean;
}

/** One finding about the camera's clock against GNSS time (clock.ts). */
export interface ClockFinding {
  /** Camera time minus GNSS time (UTC), seconds, for these photos. */
  offsetSeconds: number;
  relPaths: string[];
  message: string;
}

export interface ClockCheck {
  findings: ClockFinding[];
  /** Said, not guessed: e.g. photos without a time zone. */
  notes: string[];
  /** relPath -> the exposure's UTC time by GNSS, for the photos whose clock is flagged. */
  corrected: Record<string, string>;
}

/** One exposure (shutter release): the photos of all lenses with one number, and its MRK line. */
export interface Exposure {
  index: number;
  /** relPaths of the photos (W, Z, T, V... lenses), sorted. Empty: the MRK lists it, the card has no photo. */
  photos: string[];
  mrk: { lat: number; lng: number; ellipsoidHeight: number | null; rtk: RtkClass; status: number } | null;
  /** The first photo's position (the MRK's is used when the photo has none). */
  position: LatLng | null;
  gimbalYaw: number | null;
  /** Seconds (GPS time when an MRK exists, else the photo's capture time as epoch seconds). */
  time: number | null;
}

export type FlagCode =
  | 'photos-missing'
  | 'mrk-missing'
  | 'mrk-unreadable'
  | 'rtk-observations-missing'
  | 'rtk-navigation-missing'
  | 'mrk-damaged-lines'
  | 'photos-not-in-mrk'
  | 'photos-unnumbered'
  | 'rtk-float'
  | 'rtk-single'
  | 'no-position'
  | 'time-gap'
  | 'several-flights'
  | 'frames-unusable'
  | 'frames-hint'
  | 'rtk-stretch'
  | 'camera-clock';

export interface FlightFlag {
  code: FlagCode;
  /** 'incomplete' stops "safe to format" until the crew accepts the flight; 'warning' informs. */
  severity: 'incomplete' | 'warning';
  message: string;
}

export interface TimeGap {
  /** The exposures before and after the gap. */
  afterIndex: number;
  beforeIndex: number;
  seconds: number;
}

export interface FlightCompleteness {
  folder: string;
  /** What the crew calls it: the folder's name, with "flight 2 of 3" when one folder held several. */
  name: string;
  part: { n: number; of: number } | null;
  summary: FlightSummary;
  /** Photos that are probably useless or worth a look (frames.ts). */
  frames: FlaggedFrame[];
  clock: ClockCheck;
  /** The mission (wayline) name from the folder name, or null for a manual flight. */
  missionName: string | null;
  photos: number;
  videos: number;
  /** Lines in the MRK files; null without an MRK. */
  exposuresInMrk: number | null;
  /** Distinct exposure numbers among the photos. */
  exposuresFound: number;
  /** In the MRK, no photo on the card. */
  missingIndexes: number[];
  /** A photo on the card, no MRK line (only when an MRK exists). */
  extraIndexes: number[];
  /** Photos whose name carries no exposure number. */
  unnumberedPhotos: string[];
  rtkCounts: Record<RtkClass, number> | null;
  photosWithoutPosition: string[];
  /** Median interval between exposures, seconds; null with fewer than 4 timed exposures. */
  usualIntervalSeconds: number | null;
  gaps: TimeGap[];
  rtkExpected: boolean;
  rtkFiles: Record<RtkKind, string[]>;
  mrkProblems: Array<MrkProblem & { file: string }>;
  wayline: WaylineRef | null;
  exposures: Exposure[];
  flags: FlightFlag[];
  incomplete: boolean;
}

// ---------- safe to format (safe-to-format.ts) ----------

/** Where a file is in the queue, as far as this card's verdict cares. */
export type FileQueueState = 'done' | 'pending' | 'failed' | 'waiting';

export interface CardFileFact {
  relPath: string;
  kind: FileKind;
  size: number;
  state: FileQueueState;
  /** Pending in the flagged lane: left out of a metered upload by the crew's setting (issue 32). */
  flaggedHeld?: boolean;
  /** The plain-words error of a failed file, if any. */
  error?: string | null;
  /**
   * How the server side took the file: 'callback' (upload-callback accepted),
   * 'fast-upload' (the server already had it), 'stored' (RTK files: in the
   * bucket, no callback by design). targetId says for which target.
   */
  acknowledged: { how: 'callback' | 'fast-upload' | 'stored'; targetId: string; at: string } | null;
  /**
   * The object checked in the bucket (HEAD after the upload or at the verdict):
   * size as expected, and the checksum where the store gives one ('not-given'
   * for multipart ETags and stores without MD5). null: not checked yet.
   */
  verified: {
    targetId: string;
    at: string;
    /** 'bucket': we looked at the object; 'server': the server said it holds the content (no key of ours to look at). */
    by?: 'bucket' | 'server';
    found: boolean;
    sizeMatches: boolean;
    checksum: 'match' | 'mismatch' | 'not-given';
  } | null;
  /** The object key the server recorded the callback under, when it is not the one we uploaded. */
  serverKey?: string | null;
  /** A file not done yet that waits for a reason (its last error, in the crew's words); null: on its way. */
  waitReason?: string | null;
}

/**
 * Nobody sends the card's files now (issue 30): the run ended, or gave up on
 * a server that could not be reached. Files not done are not "on the way".
 */
export interface RunStopped {
  /** Why, in the crew's words ("Nothing answers at this address. …"); null: the run simply ended. */
  reason: string | null;
  /** What the next run waits for: "it answers" (run sync again once …). */
  once: string;
}

/** Something a scan found and did not keep, with its reason (see discover.ts). */
export interface SkippedFact {
  relPath: string;
  kind: string;
  message: string;
  /** Its content exists on the card only: the card is not safe while it is there. */
  blocking: boolean;
}

export interface SafeToFormatInput {
  card: { id: string; label: string };
  /** The current upload target: only its acknowledgements count. */
  target: { id: string; workspaceLabel: string };
  /** The card was read to the end (a scan cut short by a pulled card cannot vouch for the files not seen). */
  scanComplete: boolean;
  files: CardFileFact[];
  flights: Array<
    Pick<FlightCompleteness, 'folder' | 'incomplete' | 'flags'> &
      Partial<Pick<FlightCompleteness, 'name' | 'photos' | 'frames' | 'clock'>>
  >;
  /** Flight folders the crew accepted as they are (flagged, but fine to format). */
  acceptedFlights: readonly string[];
  /** What the last scan found and did not keep. */
  skipped?: readonly SkippedFact[];
  /** The run ended with files not sent (see RunStopped); absent: an agent is at work on them. */
  stopped?: RunStopped | null;
  /** The card has local copies (said of the flagged photos held back: they are there too). */
  copies?: boolean;
}

export interface SafeToFormatCounts {
  files: number;
  media: number;
  rtk: number;
  /** Other files (SRT, LRF, MISC/...): kept as files, stored beside their flight. */
  other: number;
  verified: number;
  /** In the workspace on the server's word only: not looked at in the bucket. */
  onServerWord: number;
  /** Found and not kept: content only on the card (blocking), or nothing to keep / on purpose. */
  skippedBlocking: number;
  skippedNamed: number;
  /** Not done yet: on their way, or not sent (notSent of them). */
  pending: number;
  /** Not done and not moving: the run ended, or they wait for the server (RunStopped, waitReason). */
  notSent: number;
  /** Of `pending`: flagged photos held for an unmetered network (issue 32). */
  flaggedHeld?: number;
  failed: number;
  waiting: number;
  notAcknowledged: number;
  notVerified: number;
  flights: number;
  flightsIncomplete: number;
  flightsAccepted: number;
}

export interface SafeToFormatVerdict {
  safe: boolean;
  /** One plain sentence per problem: what, which files or flights, what to do. Empty when safe. */
  reasons: string[];
  /** What is not kept but does not stop the verdict (excluded in the settings, system files, links out...). */
  notes: string[];
  counts: SafeToFormatCounts;
  /** The one line for the tray, the window, `status` and the notification. */
  message: string;
  /** The third line, advisory (advisory.ts): a flight's photos that look unusable. Never blocks. */
  advisory?: string | null;
}

// ---------- manifest and report (manifest.ts, report.ts) ----------

/** Everything the manifest says of one card file. */
export interface ManifestFile {
  relPath: string;
  kind: FileKind;
  size: number;
  mtimeMs: number;
  /** Lowercase hex MD5 of the content as read from the card. */
  md5: string;
  /** When the MD5 was computed (ISO); the manifest's date when unknown. */
  hashedAt?: string | null;
  state: FileQueueState;
  /** The plain-words error of a failed file. */
  error?: string | null;
  capturedAt?: string | null;
  position?: (LatLng & { absoluteAltitude?: number | null; relativeAltitude?: number | null }) | null;
  gimbalYaw?: number | null;
  aircraft?: { modelKey?: string | null; serial?: string | null } | null;
  camera?: { model?: string | null; payloadKey?: string | null; serial?: string | null } | null;
  objectKey: string | null;
  acknowledged: CardFileFact['acknowledged'];
  verified: CardFileFact['verified'];
  serverKey?: string | null;
}

export interface OffloadReportInput {
  card: { id: string; label: string };
  target: { id: string; workspaceLabel: string; serverLabel: string };
  /** ISO date-time of this manifest. */
  createdAt: string;
  hostname: string;
  tool: { name: string; version: string };
  files: ManifestFile[];
  flights: FlightCompleteness[];
  /** In the workspace. */
  verdict: SafeToFormatVerdict;
  /** On the local destinations (absent: none). */
  local?: LocalVerdict | null;
  /** Safe to format: locally safe or in the workspace, and the one line that says it. */
  safe?: boolean;
  message?: string;
}
