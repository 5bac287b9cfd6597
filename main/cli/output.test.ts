/**
 * `--json` lines: the bytes JSON.stringify makes (with the terminal's unsafe
 * characters escaped), written in blocks, never one whole string (a
 * 10,000-photo card's verdict line is 3 MB, issue 33).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { safeJsonText } from '../shared/visible.js';
import { flushJson, JSON_FLUSH_MS, printJson, RawJson, writeLines } from './output.js';

/** What reaches stdout, write by write (the stream itself is the test runner's: captured, not replaced). */
function captureStdout(): string[] {
  const writes: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    writes.push(String(chunk));
    return true;
  });
  return writes;
}

afterEach(() => {
  flushJson();
  vi.restoreAllMocks();
});

describe('the JSON lines of sync --json', () => {
  it("says 1,000 files' lines in one write, each line whole and in order", () => {
    const writes = captureStdout();
    for (let i = 0; i < 1000; i++)
      printJson({ type: 'file', path: `/card/DJI_${i}.JPG`, outcome: 'uploaded' });
    expect(writes).toHaveLength(0); // before: 1,000 writes, one per file
    flushJson();
    expect(writes).toHaveLength(1);
    const lines = writes.join('').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => (JSON.parse(l) as { path: string }).path)).toEqual(
      Array.from({ length: 1000 }, (_, i) => `/card/DJI_${i}.JPG`),
    );
  });

  it('writes what waits before any other line, and by itself within JSON_FLUSH_MS', async () => {
    const writes = captureStdout();
    printJson({ type: 'file', path: '/card/a.JPG' });
    printJson({ type: 'offline', message: 'down' });
    printJson({ type: 'file', path: '/card/b.JPG' });
    writeLines(['Done.']);
    printJson({ type: 'file', path: '/card/c.JPG' });
    expect(writes.join('')).toBe(
      '{"type":"file","path":"/card/a.JPG"}\n{"type":"offline","message":"down"}\n' +
        '{"type":"file","path":"/card/b.JPG"}\nDone.\n',
    );
    await new Promise((resolve) => setTimeout(resolve, JSON_FLUSH_MS * 3));
    expect(writes.join('')).toMatch(/Done\.\n\{"type":"file","path":"\/card\/c\.JPG"\}\n$/);
  });
});

/** What printJson writes to stdout, write by write. */
function printed(value: unknown): string[] {
  const writes: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    writes.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });
  printJson(value);
  vi.restoreAllMocks();
  return writes;
}

describe('printJson', () => {
  it('writes the text JSON.stringify makes, whatever the value', () => {
    const nullProto = Object.assign(Object.create(null) as object, { a: 1 });
    const values: unknown[] = [
      null,
      0,
      'plain',
      [],
      {},
      { type: 'verdict', nested: { empty: {}, list: [1, 'two', null, { three: [3] }] } },
      // Left out of objects, null in arrays, as JSON.stringify does.
      { gone: undefined, fn: () => 1, sym: Symbol('s'), kept: true, list: [undefined, () => 1, 2] },
      { at: new Date('2024-05-06T09:05:00Z'), n: [NaN, Infinity, -0], big: 1e21 },
      { custom: { toJSON: () => ({ as: 'this' }) }, nullProto },
      // A hostile file name: controls, bidi overrides, a surrogate pair, quotes.
      { file: 'DCIM/\u202Egpj.exe\u0085"\\\n\u{1F681}.JPG', '\u009Bkey': 'x' },
    ];
    for (const v of values) expect(printed(v).join('')).toBe(`${safeJsonText(JSON.stringify(v))}\n`);
  });

  it("writes a 10,000-photo card's 3 MB verdict line in blocks, never whole", () => {
    // The shape of the line `sync --json` prints for the bench's 10,000-file card: its flight
    // lists every photo (without position, flagged frames) and the line is some 3 MB.
    const photos = Array.from(
      { length: 10_000 },
      (_, i) => `DCIM/DJI_202401051000_001_Survey/DJI_20240105100${String(i).padStart(5, '0')}_W.JPG`,
    );
    const value = {
      type: 'verdict',
      safe: true,
      message: 'M3E_CARD: safe to format',
      flights: [
        {
          folder: 'DCIM/DJI_202401051000_001_Survey',
          photosWithoutPosition: photos,
          frames: photos.map((relPath, i) => ({
            relPath,
            index: i,
            unusable: false,
            reasons: [{ kind: 'no-position', message: `Photo ${i} has no position \u202E (no GPS fix).` }],
          })),
        },
      ],
    };
    const writes = printed(value);
    const text = writes.join('');
    expect(text).toBe(`${safeJsonText(JSON.stringify(value))}\n`);
    expect(text.length).toBeGreaterThan(2_000_000);
    // One write of the whole line (3 MB, and its copies) is what this prevents.
    expect(Math.max(...writes.map((w) => w.length))).toBeLessThan(256 * 1024);
    // The same flights kept as JSON text (a card's kept verdict, offload/card.ts): written as
    // they are, not parsed to be written again, in blocks too; a surrogate pair at a block's
    // edge stays whole (a helicopter's two halves either side of the first 64 Ki block's end).
    const heli = '\u{1F681}';
    const first = `[{"folder":"`.length;
    const flights = [{ folder: `${'x'.repeat(64 * 1024 - first - 1)}${heli}` }, ...value.flights];
    expect(JSON.stringify(flights).charCodeAt(64 * 1024)).toBe(heli.charCodeAt(1));
    const kept = { ...value, flights: new RawJson(JSON.stringify(flights)) };
    const keptWrites = printed(kept);
    expect(keptWrites.join('')).toBe(`${safeJsonText(JSON.stringify({ ...value, flights }))}\n`);
    expect(Math.max(...keptWrites.map((w) => w.length))).toBeLessThan(256 * 1024);
    expect(JSON.stringify(kept)).toBe(JSON.stringify({ ...value, flights }));
  });
});
