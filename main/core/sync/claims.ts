import type { Queue, QueueRow } from '../queue/queue.js';
import type { WorkingRow } from '../queue/rows.js';
import type { Change } from '../queue/transitions.js';

/** How long a row waits for another row with the same content before it goes on by itself. */
export const TWIN_MAX_WAIT_MS = 10 * 60_000;

/**
 * At most one row per content (fingerprint) on its way to the server: a copy
 * of the same file (the card and a watched folder, a card under a new id)
 * waits, then asks fast-upload, so bytes and callback go once.
 */
export class ContentClaims {
  /** Content (fingerprint) -> the row carrying it to the server. */
  private readonly holders = new Map<string, number>();

  constructor(
    private readonly queue: Queue,
    /** Twins put aside were woken: the loop should look again. */
    private readonly wake: () => void,
  ) {}

  /** Claims the row's content for it; null (and the row put aside) when another row carries it. */
  claim(row: Exclude<WorkingRow, { state: 'discovered' }>, to: (change: Change) => QueueRow): string | null {
    const fp = row.fingerprint.toLowerCase();
    const holder = this.holders.get(fp);
    if (holder !== undefined && holder !== row.id) {
      const other = this.queue.get(holder);
      const what = other ? other.relPath : 'another file';
      to({
        type: 'defer',
        at: Date.now() + TWIN_MAX_WAIT_MS,
        message: `Waiting for ${what} (the same content) to reach the server first.`,
      });
      return null;
    }
    this.holders.set(fp, row.id);
    return fp;
  }

  /** The row is done with its content: twins waiting for it go on now. Throws when the queue cannot be written. */
  release(fp: string, id: number): void {
    if (this.holders.get(fp) !== id) return;
    this.holders.delete(fp);
    if (this.queue.wakeTwins(fp) > 0) this.wake();
  }
}
