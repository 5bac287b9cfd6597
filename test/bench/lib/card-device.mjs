// The offload scenario's card on a block device of its own, as a real card
// is: an ext4 image on a loop device (direct I/O to its backing file, so the
// card's bytes are cached once, by the card's file system, and dropping the
// page cache makes the card cold). The loop device's read counter
// (/sys/block/loopN/stat) says how many bytes the card delivered during a
// run: the proof that nothing is read from it twice. Needs root and
// losetup/mkfs.ext4; otherwise the card is a plain folder and the counter is
// n/a (the strace proof still runs).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const MiB = 1024 * 1024;

/** Devices still set up: the benchmark closes them when it is interrupted (before removing its temp dir). */
export const openDevices = new Set();

function run(cmd, args) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * A file system for a card of `bytes` (plus room for its own metadata)
 * mounted at `mountPoint`: { device: { root, dev, readBytes(), close() } },
 * or { device: null, reason } when it cannot be made here.
 */
export function cardDevice(dir, mountPoint, bytes) {
  if (process.getuid?.() !== 0) return { device: null, reason: 'not root' };
  const img = path.join(dir, 'card.img');
  let dev = null;
  try {
    fs.writeFileSync(img, '');
    fs.truncateSync(img, Math.ceil((bytes * 1.06 + 256 * MiB) / MiB) * MiB);
    dev = run('losetup', ['--find', '--show', '--direct-io=on', img]);
    // No lazy initialisation: ext4lazyinit would write to the image during the runs.
    run('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0', dev]);
    fs.mkdirSync(mountPoint, { recursive: true });
    run('mount', ['-o', 'noatime', dev, mountPoint]);
  } catch (err) {
    if (dev) {
      try {
        run('losetup', ['-d', dev]);
      } catch {
        // nothing more to undo
      }
    }
    fs.rmSync(img, { force: true });
    return { device: null, reason: String(err.stderr || err.message).split('\n')[0] };
  }
  const stat = `/sys/block/${path.basename(dev)}/stat`;
  let closed = false;
  const device = {
    root: mountPoint,
    dev,
    /** "major:minor" of the loop device. */
    number: fs.readFileSync(`/sys/block/${path.basename(dev)}/dev`, 'utf8').trim(),
    /** Bytes read from the device since it was set up (sectors of 512 bytes, whatever the block size). */
    readBytes: () => Number(fs.readFileSync(stat, 'utf8').trim().split(/\s+/)[2]) * 512,
    close: () => {
      if (closed) return;
      closed = true;
      openDevices.delete(device);
      try {
        run('umount', [mountPoint]);
      } catch {
        run('umount', ['-l', mountPoint]);
      }
      run('losetup', ['-d', dev]);
      fs.rmSync(img, { force: true });
    },
  };
  openDevices.add(device);
  return { device, reason: null };
}

const BLKIO = '/sys/fs/cgroup/blkio';

/**
 * The card's reads limited to `bps` bytes per second, as a card reader is:
 * a cgroup (v1 blkio) of its own whose read_bps_device throttles the card's
 * loop device, buffered reads and direct ones alike (the kernel's readahead
 * runs in the reading task's cgroup). Only processes started through
 * `wrap(cmd, args)` are in it: they write themselves into the cgroup, then
 * exec the tool (same pid, so its figures are the tool's). Writes and the
 * destinations' reads are not limited. { throttle, reason }: throttle null
 * when there is no blkio hierarchy here.
 */
export function throttleReads(device, bps) {
  if (!fs.existsSync(path.join(BLKIO, 'blkio.throttle.read_bps_device')))
    return { throttle: null, reason: `no cgroup v1 blkio hierarchy at ${BLKIO}` };
  const group = path.join(BLKIO, `dms-bench-card-${process.pid}-${bps}`);
  try {
    fs.mkdirSync(group);
    fs.writeFileSync(path.join(group, 'blkio.throttle.read_bps_device'), `${device.number} ${bps}`);
  } catch (err) {
    fs.rmSync(group, { recursive: true, force: true });
    return { throttle: null, reason: err.message };
  }
  const procs = path.join(group, 'cgroup.procs');
  let closed = false;
  const throttle = {
    bps,
    group,
    wrap: (cmd, args) => ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', procs, cmd, ...args]],
    close: () => {
      if (closed) return;
      closed = true;
      openThrottles.delete(throttle);
      // Empty once its last process has exited (killed ones too).
      for (let i = 0; i < 50; i++) {
        try {
          fs.rmdirSync(group);
          return;
        } catch {
          execFileSync('sleep', ['0.1']);
        }
      }
    },
  };
  openThrottles.add(throttle);
  return { throttle, reason: null };
}

/** Throttles still set up: closed when the benchmark is interrupted. */
export const openThrottles = new Set();
