/**
 * The hash step of small files on a real card folder: what it costs in file
 * system calls (counted, not timed), and that its checks still hold with
 * fewer calls (a link out of the card, a file changed since the scan).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { defaultConfig } from '../config.js';
import type { DiscoveredRow } from '../queue/rows.js';
import { KeptBytes } from './kept.js';
import { hashStep, type StepContext } from './steps.js';
import { FileChangedError } from './step-errors.js';

let tmp: string;
let card: string;

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-steps-'));
  card = path.join(tmp, 'card');
  fs.mkdirSync(path.join(card, 'DCIM', 'DJI_202611280900_001_Survey'), { recursive: true });
});

afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A 64 KiB file on the card, as the scan found it (a row in 'discovered'). */
function smallFile(i: number): DiscoveredRow {
  const relPath = `DCIM/DJI_202611280900_001_Survey/DJI_20261128090000_${String(i).padStart(4, '0')}_W.JPG`;
  const absPath = path.join(card, relPath);
  fs.writeFileSync(absPath, Buffer.alloc(64 * 1024, i));
  const st = fs.statSync(absPath);
  return {
    id: i + 1,
    sourceId: 'card-1',
    relPath,
    absPath,
    size: st.size,
    mtimeMs: Math.trunc(st.mtimeMs),
    kind: 'media',
    state: 'discovered',
  } as DiscoveredRow;
}

/** What the hash step reads of its context (no server, no bucket: it uses neither). */
function context(): StepContext {
  return {
    config: defaultConfig(),
    kept: new KeptBytes(),
    signal: new AbortController().signal,
    onBytes: () => undefined,
  } as unknown as StepContext;
}

describe('hashStep of small files', () => {
  it('looks up the card root once, and checks each file once after its read', async () => {
    const rows = Array.from({ length: 20 }, (_, i) => smallFile(i));
    const realpath = vi.spyOn(fsp, 'realpath');
    const probe = await fsp.open(rows[0]!.absPath, 'r');
    const handleProto = Object.getPrototypeOf(probe) as { stat: () => Promise<fs.Stats> };
    await probe.close();
    const fstat = vi.spyOn(handleProto, 'stat');
    const ctx = context();
    for (const row of rows) {
      const change = await hashStep(ctx, row);
      expect(change.fingerprint).toBe(createHash('md5').update(fs.readFileSync(row.absPath)).digest('hex'));
      expect(ctx.kept.get(row.id)?.length).toBe(64 * 1024);
    }
    // One realpath per file and one for the root (was two per file), one fstat per file (was two).
    expect(realpath.mock.calls.filter(([p]) => p === card)).toHaveLength(1);
    expect(realpath).toHaveBeenCalledTimes(rows.length + 1);
    expect(fstat).toHaveBeenCalledTimes(rows.length);
  });

  it('refuses a file swapped for a link out of the card, with the root looked up already', async () => {
    const ctx = context();
    await hashStep(ctx, smallFile(0));
    const row = smallFile(1);
    const outside = path.join(tmp, 'outside.JPG');
    fs.writeFileSync(outside, Buffer.alloc(row.size, 7));
    fs.rmSync(row.absPath);
    fs.symlinkSync(outside, row.absPath);
    await expect(hashStep(ctx, row)).rejects.toMatchObject({ kind: 'invalid-input' });
  });

  it('finds a file changed since the scan, though it is not stat-ed before its read', async () => {
    const ctx = context();
    const row = smallFile(0);
    fs.utimesSync(row.absPath, new Date(), new Date(row.mtimeMs + 60_000));
    await expect(hashStep(ctx, row)).rejects.toBeInstanceOf(FileChangedError);
    const grown = smallFile(1);
    fs.appendFileSync(grown.absPath, 'more');
    fs.utimesSync(grown.absPath, new Date(), new Date(grown.mtimeMs));
    await expect(hashStep(ctx, grown)).rejects.toBeInstanceOf(FileChangedError);
  });
});
