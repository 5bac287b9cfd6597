import type { DestinationLook } from '../copies/destinations.js';
import type { Destination } from '../queue/copies.js';
import type { QueueRow } from '../queue/queue.js';
import type { DiscoveredRow } from '../queue/rows.js';
import type { Change } from '../queue/transitions.js';
import type { Place, StepContext } from './steps.js';

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

/** A file already read that a destination still wants: copied again when `run` is called. */
export interface CopyAgain {
  row: QueueRow;
  /** Copies it again; what went wrong, in plain words, or null. */
  run: (signal: AbortSignal, onBytes: (n: number) => void) => Promise<string | null>;
}

/**
 * The copy lane as the upload lane (the engine) sees it: function values
 * handed in by whoever owns the copies (the agent, sync/local-copies.ts),
 * so the engine never reaches into them. Where a file is read from, whether
 * it has a verified copy, and the copy steps the engine's copy dispatcher runs.
 */
export interface CopyPort {
  /** Cards are copied first (local destinations are set). */
  enabled: () => boolean;
  /** Where a row's file is read from: a verified copy still as written, else the card. */
  place: (row: QueueRow) => Place;
  /** The row's file can be read from a verified copy (its card may be gone). */
  hasCopy: (row: QueueRow) => boolean;
  /** A card was scanned: what each destination lacks is wanted there; the destinations stopped now. */
  prepare: (sourceId: string) => DestinationStop[];
  /** discovered -> hashed: copied to each destination that wants it, the card read once. */
  copy: (ctx: StepContext, row: DiscoveredRow) => Promise<Extract<Change, { type: 'hashed' }>>;
  /** Every file of this card found so far is read and copied; none waits to be copied (again). */
  finished: (sourceId: string) => boolean;
  /** The next file to copy again, its records now 'writing'; undefined when none is due (or none wants it). */
  nextAgain: () => CopyAgain | undefined;
}
