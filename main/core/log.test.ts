import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './log.js';

describe('the log as a terminal shows it', () => {
  it('writes names and messages from outside as escapes: the same values, nothing a terminal acts on', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const log = createLogger({ level: 'info', destination: sink });
    const file = 'DCIM/\u202eexe.gpj\u009b2J\u2028Done: 0 failed\u001b[32m.JPG';
    log.warn({ file }, `refused: \u001b]0;title\u0007\u2066ok\u2069`);
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    // eslint-disable-next-line no-control-regex
    expect(line.trimEnd()).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    const parsed = JSON.parse(line) as { file: string; msg: string };
    expect(parsed.file).toBe(file);
    expect(parsed.msg).toBe('refused: \u001b]0;title\u0007\u2066ok\u2069');
  });
});
