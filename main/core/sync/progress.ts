/** What the CLI's progress bar and the UI show. */
export interface ProgressSnapshot {
  filesTotal: number;
  filesDone: number;
  filesFailed: number;
  bytesTotal: number;
  bytesDone: number;
  /** Bytes actually sent to the bucket (fast uploads send none). */
  bytesSent: number;
  /** Bytes per second, smoothed. */
  rate: number;
  /** Seconds left at the current rate, or null when unknown. */
  etaSeconds: number | null;
  currentSource: string | null;
}

/**
 * Counts work as it happens. "Done" bytes include files the server already
 * had (their bytes never travel) so the bar reaches 100% either way; the rate
 * is measured on bytes processed (hashed or sent), smoothed over seconds.
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
  private windowBytes = 0;

  constructor(private readonly now: () => number = Date.now) {
    this.windowStart = now();
  }

  addWork(files: number, bytes: number): void {
    this.filesTotal += files;
    this.bytesTotal += bytes;
  }

  /** Bytes moved (sent to the bucket or read while hashing known content). */
  moved(bytes: number, sent: boolean): void {
    if (sent) this.bytesSent += bytes;
    this.windowBytes += bytes;
  }

  fileDone(size: number): void {
    this.filesDone++;
    this.bytesDone += size;
  }

  fileFailed(): void {
    this.filesFailed++;
  }

  reset(): void {
    this.filesTotal = this.filesDone = this.filesFailed = 0;
    this.bytesTotal = this.bytesDone = this.bytesSent = 0;
    this.rate = 0;
    this.windowBytes = 0;
    this.windowStart = this.now();
  }

  snapshot(): ProgressSnapshot {
    const t = this.now();
    const elapsed = t - this.windowStart;
    if (elapsed >= 1000) {
      const instant = (this.windowBytes * 1000) / elapsed;
      // Exponential smoothing: a steady number a person can read.
      this.rate = this.rate === 0 ? instant : this.rate * 0.7 + instant * 0.3;
      this.windowBytes = 0;
      this.windowStart = t;
    }
    const left = Math.max(0, this.bytesTotal - this.bytesDone);
    return {
      filesTotal: this.filesTotal,
      filesDone: this.filesDone,
      filesFailed: this.filesFailed,
      bytesTotal: this.bytesTotal,
      bytesDone: this.bytesDone,
      bytesSent: this.bytesSent,
      rate: Math.round(this.rate),
      etaSeconds: this.rate > 0 ? Math.ceil(left / this.rate) : null,
      currentSource: this.currentSource,
    };
  }
}
