/** A real small filesystem for the disk-full scenarios: tmpfs, which needs root (CAP_SYS_ADMIN). */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export function tryMount(dir: string, bytes: number): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], {
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

export function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'ignore' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
  }
}

/** Whether tmpfs can be mounted here (probed once: root on Linux). */
export const canMount: boolean = (() => {
  if (process.platform !== 'linux') return false;
  const probe = fs.mkdtempSync('/tmp/dms-tmpfs-probe-');
  try {
    if (!tryMount(probe, 1024 * 1024)) return false;
    unmount(probe);
    return true;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
})();

/** Fills a filesystem until `leave` bytes are free; returns the filler file. */
export function fill(dir: string, leave: number): string {
  const st = fs.statfsSync(dir);
  const file = path.join(dir, 'filler');
  fs.writeFileSync(file, Buffer.alloc(Math.max(0, st.bavail * st.bsize - leave)));
  return file;
}
