import type { LaneEta } from '../../shared/lanes.js';

/** What the CLI's progress bar and the UI show. */
export interface ProgressSnapshot {
  filesTotal: number;
  filesDone: number;
  filesFailed: number;
  bytesTotal: number;
  bytesDone: number;
  /** Bytes actually sent to the bucket (fast uploads send none). */
  bytesSent: number;
  /** Bytes per second of the bar's own bytes, smoothed; 0 until they move and while they do not. */
  rate: number;
  /** Seconds left at the current rate, or null when unknown (nothing moved yet, or nothing moves now). */
  etaSeconds: number | null;
  currentSource: string | null;
  /** Per lane, what is left and when it should be in the workspace (the engine adds it; shared/lanes.ts). */
  lanes?: LaneEta[];
}

/**
 * Counts work as it happens. "Done" bytes include files the server already
 * had (their bytes never travel) so the bar reaches 100% either way; the rate
 * is measured on those same bytes, smoothed over seconds: reading a card
 * while the server does not answer moves no byte of the bar, so it shows no
 * rate and no time left (issue 30: "1.5 MB/s ~13 s left" to a silent port).
 */
export class Progress {
  filesTotal = 0;
  filesDone = 0;
  filesFailed = 0;
  bytesTotal = 0;
  bytesDone = 0;
  bytesSent = 0;
  currentSource: string | null = null;
  private rate = 0;
  private windowStart: number;
  /** The bar's bytes at the start of the rate's window. */
  private windowDone = 0;

  constructor(private readonly now: () => number = Date.now) {
    this.windowStart = now();
  }

  addWork(files: number, bytes: number): void {
    this.filesTotal += files;
    this.bytesTotal += bytes;
  }

  /** Bytes sent of files still on their way, by row: the bar moves during a long upload. */
  private readonly partial = new Map<number, number>();

  /** Bytes moved (sent to the bucket or read while hashing known content), for the row `id` if given. */
  moved(bytes: number, sent: boolean, id?: number): void {
    if (sent) {
      this.bytesSent += bytes;
      if (id !== undefined) this.partial.set(id, (this.partial.get(id) ?? 0) + bytes);
    }
  }

  fileDone(size: number, id?: number): void {
    this.filesDone++;
    this.bytesDone += size;
    if (id !== undefined) this.partial.delete(id);
  }

  fileFailed(id?: number): void {
    this.filesFailed++;
    if (id !== undefined) this.partial.delete(id);
  }

  /** A row left the pipeline unfinished (retried later, waiting for its card): its bytes count again when resent. */
  dropPartial(id: number): void {
    this.partial.delete(id);
  }

  reset(): void {
    this.filesTotal = this.filesDone = this.filesFailed = 0;
    this.bytesTotal = this.bytesDone = this.bytesSent = 0;
    this.rate = 0;
    this.partial.clear();
    this.windowDone = 0;
    this.windowStart = this.now();
  }

  snapshot(): ProgressSnapshot {
    const t = this.now();
    let inFlight = 0;
    for (const n of this.partial.values()) inFlight += n;
    // Done: files acknowledged, plus what is already sent of those on their way.
    const done = Math.min(this.bytesTotal, this.bytesDone + inFlight);
    const elapsed = t - this.windowStart;
    if (elapsed >= 1000) {
      const instant = (Math.max(0, done - this.windowDone) * 1000) / elapsed;
      // Exponential smoothing: a steady number a person can read; nothing moving is no rate at all.
      this.rate = instant === 0 ? 0 : this.rate === 0 ? instant : this.rate * 0.7 + instant * 0.3;
      this.windowDone = done;
      this.windowStart = t;
    }
    const left = Math.max(0, this.bytesTotal - done);
    return {
      filesTotal: this.filesTotal,
      filesDone: this.filesDone,
      filesFailed: this.filesFailed,
      bytesTotal: this.bytesTotal,
      bytesDone: done,
      bytesSent: this.bytesSent,
      rate: Math.round(this.rate),
      etaSeconds: this.rate > 0 ? Math.ceil(left / this.rate) : null,
      currentSource: this.currentSource,
    };
  }
}
