import fs from 'node:fs';
import path from 'node:path';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { importWaylines } from '../../service/index.js';
import { resolveStateDir } from '../context.js';
import { requireWritable } from '../state-access.js';

export async function importWaylinesCommand(
  file: string,
  flags: { data?: string; state?: string },
): Promise<number> {
  const dataDir = flags.data ? path.resolve(flags.data) : statePaths(resolveStateDir(flags)).service;
  let items: unknown;
  try {
    items = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new DmsError('invalid-input', `${file} cannot be read as JSON: ${(err as Error).message}`, {
      retryable: false,
    });
  }
  if (!Array.isArray(items))
    throw new DmsError('invalid-input', `${file} must hold a JSON array of waylines.`, { retryable: false });
  requireWritable(dataDir, 'the waylines');
  const n = await importWaylines(dataDir, items);
  process.stdout.write(`Imported ${n} wayline${n === 1 ? '' : 's'}.\n`);
  return 0;
}
