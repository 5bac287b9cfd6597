import type { DestinationLook } from '../copies/destinations.js';
import type { Destination } from '../queue/copies.js';
import type { QueueRow } from '../queue/queue.js';
import type { WorkingRow } from '../queue/rows.js';
import type { RunStateName } from '../../shared/states.js';
import type { Place, StepContext } from './steps.js';
import type { Source } from '../sources/source.js';

export interface DestinationStop {
  sourceId: string;
  destination: Destination;
  message: string;
}

/** A destination's folder as a card's scan found it, when it is worth saying (created, gone, unplugged). */
export interface DestinationSeen {
  sourceId: string;
  destination: Destination;
  look: Exclude<DestinationLook, 'ready'>;
  message: string;
}

/**
 * The copy lane as the upload lane (the engine) sees it: function values
 * handed in by the agent's wiring (sync/peers.ts), so the engine never
 * reaches into the copies nor runs them. Where a file is read from, whether
 * it has a verified copy, and whether the copy lane still has files to read
 * (the upload lane takes a file only once it is read: a store fact, its
 * state past 'discovered').
 */
export interface CopyPort {
  /**
   * A card is about to be scanned: the destinations of this run count for
   * it before a row of it is recorded; with any, its files not read yet are
   * the copy lane's (the upload lane never takes them first).
   */
  count: (sourceId: string) => void;
  /** Where a row's file is read from: a verified copy still as written, else the card. */
  place: (row: QueueRow) => Place;
  /** The row's file can be read from a verified copy (its card may be gone). */
  hasCopy: (row: QueueRow) => boolean;
  /**
   * A card was scanned (read from `from`): what each destination lacks is wanted there; the
   * destinations stopped now (a destination on the card itself never holds a copy).
   */
  prepare: (sourceId: string, from?: Pick<Source, 'root' | 'kind'>) => DestinationStop[];
  /** New work was recorded (a scan, files tracked again): the copy lane looks again. */
  wake: () => void;
  /**
   * The copy lane, running, still has files to read or copy (in flight, due,
   * or due later with tries left): the upload lane waits for them instead of
   * ending or going idle; it is woken as each file is read and when the
   * copy lane has nothing left.
   */
  busy: () => boolean;
  /** A file of this source is being read (copied) by the copy lane now. */
  reading: (sourceId: string) => boolean;
}

/**
 * The upload lane as the copy lane sees it: function values, so each lane
 * writes only through its own door (the copies' records, a file's first
 * read) and the failure ladder stays one.
 */
export interface UploadPort {
  /** The run state: the copy lane stops only for the crew's pause or a halt (never for the server). */
  state: () => RunStateName;
  /** A step context to read a row with: its bytes counted in the run's progress, the settings. */
  context: (signal: AbortSignal, id: number) => StepContext;
  /** A read (a file's first, or a copy again) that failed: the failure ladder decides and records. */
  failed: (row: WorkingRow, err: unknown) => void;
  /** The copy lane is at work (the run says it is syncing). */
  working: () => void;
  /** A file was read, or the copy lane has nothing left: the upload lane looks again. */
  wake: () => void;
}
