import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface EjectResult {
  ok: boolean;
  message: string;
}

/**
 * Asks the OS to unmount (eject) a card after everything on it is done. It
 * only ever unmounts: nothing on the card is deleted or changed. Failure is
 * reported, never retried in a loop (the user can always pull the card).
 */
export async function ejectVolume(
  root: string,
  device?: string,
  platform = process.platform,
): Promise<EjectResult> {
  const attempts: Array<[string, string[]]> =
    platform === 'darwin'
      ? [['diskutil', ['eject', root]]]
      : platform === 'win32'
        ? [
            [
              'powershell.exe',
              [
                '-NoProfile',
                '-Command',
                `(New-Object -ComObject Shell.Application).Namespace(17).ParseName('${root.replace(/[\\']/g, '').slice(0, 2)}').InvokeVerb('Eject')`,
              ],
            ],
          ]
        : [
            ...(device ? ([['udisksctl', ['unmount', '-b', device]]] as Array<[string, string[]]>) : []),
            ['gio', ['mount', '-u', root]],
            ['umount', [root]],
          ];
  let last = '';
  for (const [cmd, args] of attempts) {
    try {
      await run(cmd, args, { timeout: 15_000 });
      return { ok: true, message: `${root} can be removed now.` };
    } catch (err) {
      last = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
    }
  }
  return {
    ok: false,
    message: `${root} could not be ejected (${last.split('\n')[0]}). It is safe to remove once your system says so.`,
  };
}
