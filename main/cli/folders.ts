import fs from 'node:fs';
import path from 'node:path';
import { commandLinePath } from '../core/config.js';
import { DmsError } from '../core/errors.js';

/**
 * The folders named on the command line (`sync`, `watch`), made absolute:
 * each must be a folder there now. One not there is a card not inserted
 * (or a path mistyped); a file named instead of its folder is a wrong
 * option, said as such, with the folder to name instead.
 */
export function folderArguments(dirs: readonly string[]): string[] {
  return dirs.map((d) => {
    const r = commandLinePath(d);
    const st = fs.statSync(r, { throwIfNoEntry: false });
    if (!st) {
      throw new DmsError('source-missing', `${r} is not a folder that exists. Is the card inserted?`, {
        retryable: false,
      });
    }
    if (!st.isDirectory()) {
      throw new DmsError(
        'invalid-input',
        `${r} is a file, not a folder: name the card, or a folder of it, and every file under it is sent. To send this file, name the folder that holds it (${path.dirname(r)}); files already sent are not sent again.`,
        { retryable: false },
      );
    }
    return r;
  });
}
