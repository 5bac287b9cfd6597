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

/** A JSON line is written in blocks of about this many characters. */
const JSON_BLOCK = 64 * 1024;

/**
 * One JSON line. File names and server messages inside stay the same values,
 * but what a terminal would act on (C1 controls, bidi overrides...) is written
 * as \u escapes: JSON.stringify leaves those raw.
 *
 * Written in blocks as it is made, never one string: a 10,000-photo card's
 * verdict line is 3 MB (its flights' lists of photos), and making it whole
 * (the text, its escaped copy, the bytes written) took 20 MiB at the very
 * end of the first sync, the agent's peak of memory (issue 33). The bytes
 * are JSON.stringify's; stdout (a file, a pipe, a terminal) is written
 * synchronously.
 */
export function printJson(value: unknown, out: Pick<NodeJS.WritableStream, 'write'> = process.stdout): void {
  // A line per file (small) waits for others (LineBatch); any other line goes now, after those.
  if (out === process.stdout && (value as { type?: unknown } | null)?.type === 'file')
    return jsonOut.push(safeJsonText(JSON.stringify(value)) + '\n');
  if (out === process.stdout) jsonOut.flush();
  let block = '';
  jsonPieces(value, PIECE_DEPTH, (piece) => {
    block += piece;
    if (block.length < JSON_BLOCK) return;
    out.write(safeJsonText(block));
    block = '';
  });
  out.write(`${safeJsonText(block)}\n`);
}

/**
 * JSON text written as it is inside a JSON line (printJson): a card's kept
 * flights (3 MB for 10,000 photos without a position) are not parsed to be
 * written again. JSON.stringify of it gives the same text.
 */
export class RawJson {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const unwritten = (v: unknown): boolean =>
  v === undefined || typeof v === 'function' || typeof v === 'symbol';

/** An array or an object JSON.stringify writes member by member (no toJSON, no class of its own). */
function container(v: unknown): v is unknown[] | Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  if (Array.isArray(v)) return true;
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/** How deep jsonPieces takes arrays and objects apart (a verdict line's photos are 4 down). */
const PIECE_DEPTH = 4;

/**
 * `JSON.stringify(value)` handed to `put` in pieces: arrays element by
 * element and plain objects member by member, `depth` levels down (a
 * photo's entry in a flight's lists, a few hundred bytes, is one piece:
 * taking every value apart cost ten times the CPU of JSON.stringify), each
 * other value as JSON.stringify writes it.
 */
function jsonPieces(value: unknown, depth: number, put: (piece: string) => void): void {
  if (value instanceof RawJson) {
    // In blocks, as the rest of the line; never between the two halves of a surrogate pair.
    const text = value.text;
    for (let at = 0; at < text.length;) {
      let end = Math.min(text.length, at + JSON_BLOCK);
      const next = text.charCodeAt(end);
      if (next >= 0xdc00 && next <= 0xdfff) end++;
      put(text.slice(at, end));
      at = end;
    }
    return;
  }
  if (depth <= 0 || !container(value)) {
    put(JSON.stringify(value) ?? 'null');
    return;
  }
  if (Array.isArray(value)) {
    put('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) put(',');
      const v: unknown = value[i];
      jsonPieces(unwritten(v) ? null : v, depth - 1, put);
    }
    put(']');
    return;
  }
  let sep = '{';
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const v = value[k];
    if (unwritten(v)) continue;
    put(`${sep}${JSON.stringify(k)}:`);
    sep = ',';
    jsonPieces(v, depth - 1, put);
  }
  put(sep === '{' ? '{}' : '}');
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
