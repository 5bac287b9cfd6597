/**
 * One source (a card, or a folder) as the offload modules see it, read from
 * the queue of the bound target: its files with their state, acknowledgement
 * and bucket check, its flights (photos, RTK files, the exposure logs kept
 * when they were hashed), and from those the "safe to format" verdict and the
 * manifest's input. Reads only: the checks in the bucket are made by the
 * engine (SyncEngine.verifySource) before this is asked.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FileInfo } from '../queue/file-info.js';
import type { Queue } from '../queue/queue.js';
import type { FactRow, QueueRow } from '../queue/rows.js';
import { TOOL } from '../version.js';
import { gatherLocal, localVerdict, type LocalVerdict } from '../copies/locally-safe.js';
import type { Destination } from '../queue/copies.js';
import { formatBytes } from '../../shared/sizes.js';
import { analyseFlight } from './flight.js';
import { splitFlights } from './split.js';
import { rtkKindOf } from '../media/rtk-files.js';
import { safeToFormat } from './safe-to-format.js';
import { workspaceLabelOf } from '../session/target.js';
import type {
  CardFileFact,
  FileQueueState,
  FlightCompleteness,
  FlightInput,
  ManifestFile,
  OffloadReportInput,
  RunStopped,
  SafeToFormatVerdict,
} from './types.js';
import { storedPlain, type Moment } from '../errors.js';

export interface CardRef {
  sourceId: string;
  /** What the crew calls it (the volume label, a folder name). */
  label: string;
}

/** A file as the verdict and the manifest's ledger see it: no metadata (see CardOffload.files). */
export type FileFact = Pick<
  ManifestFile,
  | 'relPath'
  | 'kind'
  | 'size'
  | 'mtimeMs'
  | 'md5'
  | 'state'
  | 'error'
  | 'objectKey'
  | 'acknowledged'
  | 'verified'
  | 'serverKey'
>;

export interface CardOffload {
  card: CardRef;
  /** Every file with its state, content and acknowledgement (what the verdict is made of). */
  facts: FileFact[];
  /**
   * The same files with their metadata (time, position, aircraft, camera)
   * for the manifest and the report: read from the queue when first asked
   * (a card re-inserted unchanged needs none of it).
   */
  files: ManifestFile[];
  flights: FlightCompleteness[];
  /** In the workspace: acknowledged by the current target and checked in its bucket. */
  verdict: SafeToFormatVerdict;
  /** Locally safe: on every local destination, verified by reading back (null: no destination). */
  local: LocalVerdict | null;
  /** Safe to format: locally safe, or in the workspace. */
  safe: boolean;
  /** The one line for the tray, the window, `status` and the notification. */
  message: string;
  target: OffloadReportInput['target'];
  /** The flights as `sync` shows them (without their exposures) as JSON, when kept with the verdict. */
  shownFlightsJson?: string;
  /** What the manifest vouches for in this state (publish.ts), when worked out with the verdict. */
  digest?: string;
}

/** A flight as `sync --json` shows it: its exposures stay in the report. */
export type ShownFlight = Omit<FlightCompleteness, 'exposures'>;

/** The card's flights as shown: kept with the verdict, else its flights without their exposures. */
export function shownFlights(o: CardOffload): ShownFlight[] {
  return o.shownFlightsJson !== undefined
    ? (JSON.parse(o.shownFlightsJson) as ShownFlight[])
    : o.flights.map(({ exposures: _e, ...f }) => f);
}

const iso = (ms: number): string => new Date(ms).toISOString();

function stateOf(row: { state: QueueRow['state'] }): FileQueueState {
  switch (row.state) {
    case 'done':
      return 'done';
    case 'failed':
      return 'failed';
    case 'waiting-for-source':
      return 'waiting';
    default:
      return 'pending';
  }
}

const HOW = { uploaded: 'callback', 'fast-uploaded': 'fast-upload', stored: 'stored' } as const;

function factOf(row: FactRow, targetKey: string): FileFact {
  const done = row.state === 'done' && row.outcome !== null && row.doneAt !== null;
  const v = done ? row.verified : null;
  return {
    relPath: row.relPath,
    kind: row.kind,
    size: row.size,
    mtimeMs: row.mtimeMs,
    md5: row.fingerprint ?? '',
    state: stateOf(row),
    error: row.state === 'failed' ? row.errorMessage : null,
    objectKey: row.objectKey,
    acknowledged:
      done && row.outcome && row.doneAt !== null
        ? { how: HOW[row.outcome], targetId: targetKey, at: iso(row.doneAt) }
        : null,
    verified: v
      ? {
          targetId: targetKey,
          at: iso(v.at),
          by: v.by,
          found: v.found,
          sizeMatches: v.size === row.size,
          checksum: v.checksum,
        }
      : null,
    serverKey: row.serverKey ?? null,
  };
}

/** A file's fact with its metadata from its info (in the manifest's order of fields). */
function fileOf(fact: FileFact, info: FileInfo | undefined): ManifestFile {
  const pos = info?.metadata.shoot_position;
  return {
    relPath: fact.relPath,
    kind: fact.kind,
    size: fact.size,
    mtimeMs: fact.mtimeMs,
    md5: fact.md5,
    state: fact.state,
    error: fact.error ?? null,
    capturedAt: info?.metadata.created_time ?? null,
    position:
      pos?.lat !== undefined && pos.lng !== undefined
        ? {
            lat: pos.lat,
            lng: pos.lng,
            absoluteAltitude: info?.metadata.absolute_altitude ?? null,
            relativeAltitude: info?.metadata.relative_altitude ?? null,
          }
        : null,
    gimbalYaw: info?.metadata.gimbal_yaw_degree ?? null,
    aircraft: info ? { modelKey: info.droneModelKey ?? null, serial: info.sn ?? null } : null,
    camera: info
      ? {
          model: info.cameraModel ?? null,
          payloadKey: info.payloadModelKey ?? null,
          serial: info.cameraSerial ?? null,
        }
      : null,
    objectKey: fact.objectKey,
    acknowledged: fact.acknowledged,
    verified: fact.verified,
    serverKey: fact.serverKey ?? null,
  };
}

/** Why a file not done yet waits, in the crew's words (its last error); null when it is on its way. */
function waitReasonOf(
  row: Pick<FactRow, 'state' | 'errorKind' | 'errorMessage'>,
  during: Moment,
): string | null {
  if (stateOf(row) !== 'pending' || !row.errorKind) return null;
  return storedPlain(row.errorKind, row.errorMessage, during);
}

/** The crew's settings the flight checks use. */
export interface FlightOptions {
  /** Photos below this height above take-off (metres) are flagged; null: not checked. */
  minHeight?: number | null;
}

const folderOf = (relPath: string): string => path.posix.dirname(relPath.replace(/\\/g, '/'));

/** What the flight checks read of a file: a queue row, or its path and kind with its info. */
export type FlightFile = Pick<QueueRow, 'relPath' | 'kind'> & { info?: FileInfo | undefined };

/** The flights of a source: one per folder holding media or RTK files. */
export function flightsOf(
  queue: Queue,
  sourceId: string,
  rows: readonly FlightFile[],
  opts: FlightOptions = {},
): FlightCompleteness[] {
  const mrk = queue.flights.mrkOf(sourceId);
  const byFolder = new Map<string, FlightFile[]>();
  for (const r of rows) {
    const folder = folderOf(r.relPath);
    const list = byFolder.get(folder);
    if (list) list.push(r);
    else byFolder.set(folder, [r]);
  }
  return (
    [...byFolder.entries()]
      // Folders of other files alone (MISC/, a folder of previews) are no flight.
      .filter(([, files]) => files.some((f) => f.kind !== 'other'))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([folder, files]) => {
        const flightPath = files.find((f) => f.info?.path)?.info?.path ?? '';
        const match = flightPath ? queue.history.waylineOf(flightPath) : null;
        const input: FlightInput = {
          folder,
          media: files
            .filter((f) => f.kind === 'media')
            .map((f) => {
              const meta = f.info?.metadata;
              const p = meta?.shoot_position;
              return {
                relPath: f.relPath,
                capturedAt: meta?.created_time ?? null,
                position: p?.lat !== undefined && p.lng !== undefined ? { lat: p.lat, lng: p.lng } : null,
                gimbalYaw: meta?.gimbal_yaw_degree ?? null,
                relativeAltitude: meta?.relative_altitude ?? null,
                frame: f.info?.frame ?? null,
              };
            }),
          rtkFiles: files.flatMap((f) => {
            const kind = f.kind === 'rtk' ? rtkKindOf(f.relPath) : undefined;
            return kind ? [{ relPath: f.relPath, kind }] : [];
          }),
          mrk: mrk
            .filter((m) => folderOf(m.relPath) === folder)
            .map((m) => ({ relPath: m.relPath, ...m.parsed })),
          wayline: match ? { id: match.waylineId, name: match.waylineName, start: null } : null,
        };
        return splitFlights({ ...input, minHeight: opts.minHeight ?? null }).map(analyseFlight);
      })
      .flat()
  );
}

/**
 * Everything the crew needs to know about one source, for the current
 * target: files, flights, and the verdict.
 */
export function cardOffload(
  queue: Queue,
  card: CardRef,
  /** The local destinations in force (those the card was copied to count too). */
  destinations: readonly Destination[] = [],
  flightOptions: FlightOptions = {},
  /** The run ended with files not sent (issue 30): they are said as not sent, with why, not "on the way". */
  stopped: RunStopped | null = null,
): CardOffload {
  const target = queue.target;
  if (!target) throw new Error('The queue is not bound to a target.');
  const keeping = verdictKeeping(queue, card, destinations, flightOptions, stopped);
  const made = (): CardOffload => madeOffload(queue, target, card, destinations, flightOptions, stopped);
  if (keeping?.kept) return keptOffload(queue, card, target, keeping, made);
  const o = made();
  if (keeping) keepVerdict(queue, keeping, o);
  return o;
}

/**
 * A card's verdict as kept in the store (meta `card-verdict <target>
 * <source>`), with the stamp of what it was made from; its flights as shown
 * are kept beside it (`card-verdict-flights ...`, the stamp first: 3 MB for
 * 10,000 photos without a position), read only when shown.
 */
interface KeptVerdict {
  stamp: string;
  verdict: SafeToFormatVerdict;
  /** What the manifest vouches for (publish.ts). */
  digest: string;
  /**
   * The earliest time a done file was last checked in the bucket (all of
   * them by a look of ours); null when some file is due at any time (not
   * checked, the server's word only): see checksDueBefore.
   */
  checkedFrom: number | null;
}

interface Keeping {
  key: string;
  stamp: string;
  kept: KeptVerdict | null;
}

/** Bumped when a kept verdict's shape or making changes (besides the app's version). */
const KEPT_FORMAT = 1;

let codeStamp: string | undefined;

/**
 * The code that makes a verdict, summed up once per process: the files of
 * the offload modules (this folder: the rules, the flights, the words) and
 * of the rows' reading and the stored errors' words. A kept verdict is given
 * only by the code that made it, even across an update that kept the
 * version number. When the files cannot be read, a stamp of this process
 * alone: nothing kept by another is given.
 */
function verdictCode(): string {
  if (codeStamp !== undefined) return codeStamp;
  const h = createHash('sha256');
  try {
    const self = fileURLToPath(import.meta.url);
    const here = path.dirname(self);
    const ext = path.extname(self);
    const files = fs
      .readdirSync(here)
      .filter((f) => f.endsWith(ext) && !f.includes('.test.'))
      .sort()
      .map((f) => path.join(here, f));
    for (const rel of ['../queue/rows', '../errors', '../../shared/lanes'])
      files.push(path.join(here, `${rel}${ext}`));
    for (const f of files) h.update(`${path.basename(f)}\n`).update(fs.readFileSync(f));
  } catch {
    h.update(`${process.pid} ${Date.now()} ${Math.random()}`);
  }
  return (codeStamp = h.digest('hex'));
}

/**
 * Where the verdict of a card is kept and whether the kept one still holds.
 * Null when none is kept: with local copies the verdict also rests on the
 * destinations' disks (made every time), and rows never counted have no stamp.
 */
function verdictKeeping(
  queue: Queue,
  card: CardRef,
  destinations: readonly Destination[],
  opts: FlightOptions,
  stopped: RunStopped | null,
): Keeping | null {
  const target = queue.target;
  if (!target) return null;
  // The verdict speaks only of what is on disk: changes waiting for a shared commit go first.
  queue.commitWaiting();
  if (destinations.length > 0 || queue.copies.countingFor(card.sourceId).length > 0) return null;
  const changes = queue.changesOf(card.sourceId);
  if (changes === undefined) return null;
  const stamp = verdictStamp(queue, target, card, changes, opts, stopped);
  const key = `card-verdict ${target.id} ${card.sourceId}`;
  let kept: KeptVerdict | null = null;
  try {
    const found = JSON.parse(queue.getMeta(key) ?? 'null') as KeptVerdict | null;
    if (found?.stamp === stamp) kept = found;
  } catch {
    // unreadable: made again
  }
  return { key, stamp, kept };
}

/**
 * What a card's verdict (with no local destination) is made of, summed up:
 * the count of changes to its rows (any column of any file row: the store's
 * triggers count each insert, update and delete in the change's own
 * transaction), the target, the card's name, its last scan, what it skipped,
 * its accepted flights and MRK files, the wayline matches, the settings, how
 * the run stopped, the app's version and the code that makes it. A crash between a change and a
 * verdict cannot leave a wrong one: the count moves with the change, in its
 * commit, and a verdict is kept only with the stamp it was made at.
 */
function verdictStamp(
  queue: Queue,
  target: NonNullable<Queue['target']>,
  card: CardRef,
  changes: number,
  opts: FlightOptions,
  stopped: RunStopped | null,
): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        KEPT_FORMAT,
        TOOL.version,
        verdictCode(),
        changes,
        target,
        card,
        queue.sources.lastScan(card.sourceId)?.complete ?? null,
        queue.sources.skipped(card.sourceId),
        queue.flights.accepted(card.sourceId),
        queue.flights.mrkOf(card.sourceId),
        queue.history.waylinesStamp(),
        opts.minHeight ?? null,
        stopped,
      ]),
    )
    .digest('hex');
}

/** Keeps a verdict just made, with its stamp: its flights as shown first, then the verdict. */
function keepVerdict(queue: Queue, keeping: Keeping, o: CardOffload): void {
  o.digest = digestOf(o);
  const shown = JSON.stringify(shownFlights(o));
  o.shownFlightsJson = shown;
  const kept: KeptVerdict = {
    stamp: keeping.stamp,
    verdict: o.verdict,
    digest: o.digest,
    checkedFrom: checkedFrom(o.facts),
  };
  queue.setMeta(`${keeping.key} flights`, `${keeping.stamp}\n${shown}`);
  queue.setMeta(keeping.key, JSON.stringify(kept));
}

/** When the first of the done files was last checked in the bucket; null when one is due at any time. */
function checkedFrom(facts: readonly FileFact[]): number | null {
  let first = Number.MAX_SAFE_INTEGER;
  for (const f of facts) {
    if (f.state !== 'done') continue;
    const v = f.verified;
    if (!v || v.by === 'server' || !f.md5) return null;
    first = Math.min(first, Date.parse(v.at));
  }
  return first;
}

/**
 * Whether a bucket check of the card's done files is due (verifySource): a
 * file never checked, vouched for by the server alone, or last checked at or
 * before `before`. Answered from the kept verdict when nothing changed on
 * the card since (no read of every file); true when it cannot tell.
 */
export function checksDueBefore(
  queue: Queue,
  card: CardRef,
  before: number,
  destinations: readonly Destination[] = [],
  flightOptions: FlightOptions = {},
  stopped: RunStopped | null = null,
): boolean {
  const checked = verdictKeeping(queue, card, destinations, flightOptions, stopped)?.kept?.checkedFrom;
  return checked === undefined || checked === null || checked <= before;
}

/**
 * The kept verdict of a card nothing changed on: its files and flights (the
 * manifest's, the report's) are read from the store only when asked.
 */
function keptOffload(
  queue: Queue,
  card: CardRef,
  target: NonNullable<Queue['target']>,
  keeping: Keeping,
  made: () => CardOffload,
): CardOffload {
  const kept = keeping.kept as KeptVerdict;
  let full: CardOffload | undefined;
  const whole = (): CardOffload => (full ??= made());
  let shown: string | undefined;
  return {
    card,
    get facts() {
      return whole().facts;
    },
    get files() {
      return whole().files;
    },
    get flights() {
      return whole().flights;
    },
    get shownFlightsJson() {
      if (shown === undefined) {
        const text = queue.getMeta(`${keeping.key} flights`) ?? '';
        const at = text.indexOf('\n');
        shown =
          at >= 0 && text.slice(0, at) === keeping.stamp
            ? text.slice(at + 1)
            : JSON.stringify(shownFlights(whole()));
      }
      return shown;
    },
    verdict: kept.verdict,
    local: null,
    safe: kept.verdict.safe,
    message: kept.verdict.message,
    target: { id: target.key, workspaceLabel: workspaceLabelOf(target), serverLabel: target.label },
    digest: kept.digest,
  };
}

/** The part of a card's state a manifest vouches for (not the time it was written). */
export function digestOf(o: Pick<CardOffload, 'target' | 'facts' | 'verdict'>): string {
  // The SHA-256 of JSON.stringify([target, facts, safe, reasons]), hashed fact by fact (not one string).
  const h = createHash('sha256').update(`[${JSON.stringify(o.target.id)},[`);
  for (const [i, f] of o.facts.entries())
    h.update(
      `${i ? ',' : ''}${JSON.stringify([
        f.relPath,
        f.md5,
        f.state,
        f.acknowledged?.how,
        f.verified?.found,
        f.verified?.sizeMatches,
        f.verified?.checksum,
      ])}`,
    );
  return h.update(`],${JSON.stringify(o.verdict.safe)},${JSON.stringify(o.verdict.reasons)}]`).digest('hex');
}

/** The card's offload made from every file of it. */
function madeOffload(
  queue: Queue,
  target: NonNullable<Queue['target']>,
  card: CardRef,
  destinations: readonly Destination[],
  flightOptions: FlightOptions,
  stopped: RunStopped | null,
): CardOffload {
  const factRows = queue.factsOf(card.sourceId);
  const fileFacts = factRows.map((r) => factOf(r, target.key));
  // The files' info, read once and only when needed (new flights, or the files' metadata):
  // two columns, not the whole rows.
  let infos: Map<number, FileInfo> | undefined;
  const infosOf = (): Map<number, FileInfo> => (infos ??= queue.infosOf(card.sourceId));
  const flightFiles = (): FlightFile[] =>
    factRows.map((r) => ({ relPath: r.relPath, kind: r.kind, info: infosOf().get(r.id) }));
  const flights = cachedFlights(queue, card.sourceId, factRows, flightOptions, flightFiles);
  const workspaceLabel = workspaceLabelOf(target);
  const facts: CardFileFact[] = fileFacts.map((f, i) => ({
    relPath: f.relPath,
    kind: f.kind,
    size: f.size,
    state: f.state,
    ...(f.state === 'pending' && factRows[i]?.lane === 'flagged' ? { flaggedHeld: true } : {}),
    error: f.error ?? null,
    acknowledged: f.acknowledged,
    verified: f.verified,
    serverKey: f.serverKey ?? null,
    waitReason: waitReasonOf(factRows[i] as FactRow, stopped ? 'request' : 'upload'),
  }));
  const verdict = safeToFormat({
    card: { id: card.sourceId, label: card.label },
    target: { id: target.key, workspaceLabel },
    scanComplete: queue.sources.lastScan(card.sourceId)?.complete ?? false,
    files: facts,
    flights,
    acceptedFlights: queue.flights.accepted(card.sourceId),
    skipped: queue.sources.skipped(card.sourceId),
    stopped,
    copies: destinations.length > 0,
  });
  const copies = gatherLocal(queue, card, destinations, factRows);
  const local = copies ? localVerdict(copies) : null;
  let files: ManifestFile[] | undefined;
  return {
    card,
    facts: fileFacts,
    get files(): ManifestFile[] {
      if (!files) {
        const info = infosOf();
        files = fileFacts.map((f, i) => fileOf(f, info.get((factRows[i] as FactRow).id)));
        infos = undefined; // not held as long as the verdict is (the agent's events, the window)
      }
      return files;
    },
    flights,
    verdict,
    local,
    ...headline(verdict, local, fileFacts),
    target: { id: target.key, workspaceLabel, serverLabel: target.label },
  };
}

/**
 * A card's flights: as last analysed when nothing they are made of changed
 * since (every row of the card keeps its id and time; the MRK files, the
 * wayline matches, the settings and the app's version are the same), else
 * analysed now from every file's info and kept for the next time.
 */
function cachedFlights(
  queue: Queue,
  sourceId: string,
  facts: readonly FactRow[],
  opts: FlightOptions,
  rows: () => FlightFile[],
): FlightCompleteness[] {
  const h = createHash('sha256').update(JSON.stringify([TOOL.version, opts.minHeight ?? null]));
  // The rows in one update: the same digest as one per row, without 10,000 calls into the hash.
  h.update(facts.map((f) => `${f.id}|${f.updatedAt}\n`).join(''));
  for (const m of queue.flights.mrkOf(sourceId)) h.update(JSON.stringify(m));
  h.update(queue.history.waylinesStamp());
  const stamp = h.digest('hex');
  const kept = queue.flights.summaryOf(sourceId, stamp);
  if (kept !== undefined) return JSON.parse(kept) as FlightCompleteness[];
  const flights = flightsOf(queue, sourceId, rows(), opts);
  queue.flights.keepSummary(sourceId, stamp, JSON.stringify(flights));
  return flights;
}

/**
 * The card's one line: in the workspace says it all; locally safe first says
 * where the copies are and how far the upload is ("3.1 GB of 58 GB in the
 * workspace"); else what stops it.
 */
function headline(
  verdict: SafeToFormatVerdict,
  local: LocalVerdict | null,
  files: readonly FileFact[],
): { safe: boolean; message: string } {
  if (verdict.safe || !local?.safe) return { safe: verdict.safe, message: verdict.message };
  const total = files.reduce((n, f) => n + f.size, 0);
  const there = files.filter((f) => f.state === 'done').reduce((n, f) => n + f.size, 0);
  return {
    safe: true,
    message: `${local.message}; the upload continues from the copies (${formatBytes(there)} of ${formatBytes(total)} in the workspace)`,
  };
}

/** The input of the manifest and the report for a source's offload, dated now. */
export function reportInput(
  o: CardOffload,
  now = new Date(),
  tool = { name: 'Drone Media Sync', version: '0' },
): OffloadReportInput {
  return {
    card: { id: o.card.sourceId, label: o.card.label },
    target: o.target,
    createdAt: now.toISOString(),
    hostname: os.hostname(),
    tool,
    files: o.files,
    flights: o.flights,
    verdict: o.verdict,
    local: o.local,
    safe: o.safe,
    message: o.message,
  };
}
