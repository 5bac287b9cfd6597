import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushJson, JSON_FLUSH_MS, printJson, writeLines } from './output.js';

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
