/**
 * One source (a card, or a folder) as the offload modules see it, read from
 * the queue of the bound target: its files with their state, acknowledgement
 * and bucket check, its flights (photos, RTK files, the exposure logs kept
 * when they were hashed), and from those the "safe to format" verdict and the
 * manifest's input. Reads only: the checks in the bucket are made by the
 * engine (SyncEngine.verifySource) before this is asked.
 */
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
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
  // The verdict speaks only of what is on disk: changes waiting for a shared commit go first.
  queue.commitWaiting();
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
