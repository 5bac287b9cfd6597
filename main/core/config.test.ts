import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { configSchema, defaultConfig, loadConfig } from './config.js';

// A run without a settings file takes the defaults without loading zod (issue 33): they are
// written out in config.ts, and must stay what the schema makes of an empty file.
it('the written-out defaults are what the schema makes of empty settings', () => {
  expect(defaultConfig()).toEqual(configSchema().parse({}));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-config-'));
  try {
    const empty = path.join(dir, 'config.json');
    fs.writeFileSync(empty, '{}');
    expect(loadConfig(path.join(dir, 'missing.json'))).toEqual(loadConfig(empty));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('each missing settings file gets its own defaults, not one shared object', () => {
  const a = defaultConfig();
  a.include.push('RAW');
  a.concurrency.files = 9;
  expect(defaultConfig().include).not.toContain('RAW');
  expect(defaultConfig().concurrency.files).toBe(3);
});
