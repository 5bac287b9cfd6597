// The read-once proof's other half: the agent run under strace, every read of
// a file under the card counted by path. The loop device's counter says the
// card delivered each byte once; this says no file was read twice even from
// the page cache (a second read of a cached file never reaches the device).
import fs from 'node:fs';

/** The syscalls that move a file's bytes into the process (strace -e trace=...). */
export const READ_CALLS = [
  'read',
  'pread64',
  'readv',
  'preadv',
  'preadv2',
  'copy_file_range',
  'sendfile',
  'splice',
];

/** strace's options for the proof: threads followed, fds shown with their paths, no data printed. */
export function straceArgs(logFile) {
  return [
    '-f',
    '-qq',
    '-y',
    '-s',
    '0',
    '-e',
    'signal=none',
    '-e',
    `trace=${READ_CALLS.join(',')},mmap`,
    '-o',
    logFile,
  ];
}

const CALL = new RegExp(`^(\\d+)\\s+(${READ_CALLS.join('|')}|mmap)\\((.*)$`);
const RESUMED = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$/;
const RESULT = /\)\s+=\s+(-?\d+)/;

/**
 * Bytes read per file under `root` from an strace log (-f -y): reads split
 * by another thread's line ("<unfinished ...>" / "<... resumed>") are joined.
 * { files: Map<path, { bytes, reads }>, mmaps: [path] (a card file mapped: its reads would not show) }.
 */
export function readsUnder(logFile, root) {
  const prefix = root.endsWith('/') ? root : `${root}/`;
  const files = new Map();
  const mmaps = [];
  const open = new Map();
  // The file read from: the first fd's path (sendfile: the second, its input).
  const fdPath = (call, args) => {
    const paths = [...args.matchAll(/\d+<([^>]*)>/g)].map((m) => m[1]);
    return (call === 'sendfile' ? paths[1] : paths[0]) ?? null;
  };
  const count = (call, file, rest) => {
    if (file === null || !file.startsWith(prefix)) return;
    if (call === 'mmap') return void mmaps.push(file);
    const r = RESULT.exec(rest);
    const n = r ? Number(r[1]) : -1;
    if (n <= 0) return;
    const f = files.get(file) ?? { bytes: 0, reads: 0 };
    f.bytes += n;
    f.reads++;
    files.set(file, f);
  };
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
    const c = CALL.exec(line);
    if (c) {
      const [, pid, call, args] = c;
      const file = fdPath(call, args);
      if (args.includes('<unfinished ...>')) open.set(pid, { call, file });
      else count(call, file, args);
      continue;
    }
    const r = RESUMED.exec(line);
    if (r) {
      const pending = open.get(r[1]);
      open.delete(r[1]);
      if (pending) count(pending.call, pending.file, r[3]);
    }
  }
  return { files, mmaps };
}
