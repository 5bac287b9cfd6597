import type { ProgressSnapshot } from '../core/sync/progress.js';
import { formatBytes } from '../shared/sizes.js';
import { safeJsonText, visible } from '../shared/visible.js';
import { asRun, invokedAs } from './invocation.js';

// One way to say a size everywhere (shared/sizes.ts): the CLI's lines sit beside the card's
// verdict lines, made in core with it ("4.9 KB in the workspace" beside "4.9 KB copied").
export { formatBytes };

export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

/** One line: [#####-----] 37/212 files  1.2 GB/3.4 GB  25 MB/s  ~4 min */
export function progressLine(p: ProgressSnapshot, width = 24): string {
  const frac =
    p.bytesTotal > 0
      ? Math.min(1, p.bytesDone / p.bytesTotal)
      : p.filesTotal > 0
        ? p.filesDone / p.filesTotal
        : 0;
  const filled = Math.round(frac * width);
  const bar = '#'.repeat(filled) + '-'.repeat(width - filled);
  const eta =
    p.etaSeconds !== null && p.filesDone < p.filesTotal ? `  ~${formatDuration(p.etaSeconds)} left` : '';
  // No rate until bytes move, and none while nothing moves (issue 30): what it is doing instead.
  const rate =
    p.rate > 0 ? `  ${formatBytes(p.rate)}/s${eta}` : p.bytesDone === 0 ? '  (nothing sent yet)' : '';
  return `[${bar}] ${p.filesDone}/${p.filesTotal} files  ${formatBytes(p.bytesDone)}/${formatBytes(p.bytesTotal)}${rate}`;
}

/** A progress line redrawn in place on a terminal; silent otherwise. */
export class ProgressBar {
  private last = '';
  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  get enabled(): boolean {
    return Boolean(this.stream.isTTY);
  }

  update(p: ProgressSnapshot): void {
    if (!this.enabled) return;
    const line = progressLine(p).slice(0, (this.stream.columns ?? 100) - 1);
    if (line === this.last) return;
    this.last = line;
    this.stream.write(`\r\x1b[2K${line}`);
  }

  done(): void {
    if (this.enabled && this.last) this.stream.write('\r\x1b[2K');
    this.last = '';
  }
}

/**
 * One JSON line. File names and server messages inside stay the same values,
 * but what a terminal would act on (C1 controls, bidi overrides...) is written
 * as \u escapes: JSON.stringify leaves those raw.
 */
export function printJson(value: unknown): void {
  const line = safeJsonText(JSON.stringify(value)) + '\n';
  // A line per file waits for others (LineBatch); any other line goes now, after those.
  if ((value as { type?: unknown } | null)?.type === 'file') return jsonOut.push(line);
  jsonOut.flush();
  process.stdout.write(line);
}

/** How long a JSON line may wait for others to share its write to stdout. */
export const JSON_FLUSH_MS = 50;

/**
 * The files' JSON lines written together: `sync --json` says a line per
 * file, and one write per line was 7 % of the agent's samples for 5,000
 * small files (a write to a pipe wakes its reader each time). Lines wait at
 * most JSON_FLUSH_MS; they are written before any other line to stdout
 * (printJson, writeLines) and at exit, in order.
 */
class LineBatch {
  private lines: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private hooked = false;

  constructor(private readonly stream: () => NodeJS.WritableStream) {}

  push(line: string): void {
    this.lines.push(line);
    if (!this.hooked) {
      this.hooked = true;
      // stdout to a file or a pipe is written synchronously on POSIX: what waits is not lost at exit.
      process.once('exit', () => this.flush());
    }
    this.timer ??= setTimeout(() => this.flush(), JSON_FLUSH_MS).unref();
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.lines.length === 0) return;
    const text = this.lines.join('');
    this.lines = [];
    this.stream().write(text);
  }
}

const jsonOut = new LineBatch(() => process.stdout);

/** Writes the JSON lines that wait now (before a command returns, or another write to stdout). */
export function flushJson(): void {
  jsonOut.flush();
}

/**
 * Lines for a person, each made visible-safe: a file name or a server message
 * inside can neither start a line of its own (CR, LF) nor send escapes
 * (colours, clear screen, window title) nor turn the text around (U+202E).
 */
export function writeLines(lines: readonly string[], stream: NodeJS.WritableStream = process.stdout): void {
  // A hint to run a command names it as the user runs it (`npx drone-media-sync …` in a checkout).
  const as = invokedAs();
  // JSON lines said before go first (a command that says both).
  if (stream === process.stdout) flushJson();
  if (lines.length > 0) stream.write(lines.map((l) => asRun(visible(l), as)).join('\n') + '\n');
}
