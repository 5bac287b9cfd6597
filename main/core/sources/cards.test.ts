import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { cardAbove, sourceAt } from './cards.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-card-above-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('a folder of a DJI card knows its card; the card itself and a folder of no card do not', () => {
  const card = path.join(dir, 'M3E_CARD');
  const flight = path.join(card, 'DCIM', 'DJI_202405061015_001_Quarry');
  fs.mkdirSync(flight, { recursive: true });
  fs.mkdirSync(path.join(dir, 'Flights', 'Quarry'), { recursive: true });

  expect(sourceAt(card).kind).toBe('card');
  expect(sourceAt(flight).kind).toBe('folder');
  expect(cardAbove(flight)).toBe(card);
  expect(cardAbove(path.join(card, 'DCIM'))).toBe(card);
  // A folder on no card (the laptop's own), and the card itself: no card above them.
  expect(cardAbove(path.join(dir, 'Flights', 'Quarry'))).toBeUndefined();
  expect(cardAbove(card)).toBeUndefined();
});
