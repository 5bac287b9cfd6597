/**
 * Sizes as Windows Explorer shows them (1 KB = 1024 bytes): one way for the
 * window, the tray, the notifications and the lines the shell makes for
 * them, so two numbers on one screen never disagree ("4.5 MB" beside "4.5 MB").
 */
const UNITS = ['KB', 'MB', 'GB', 'TB'] as const;

export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '–';
  if (n < 1024) return `${Math.round(n)} ${n === 1 ? 'byte' : 'bytes'}`;
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  const digits = v >= 100 ? 0 : 1;
  return `${v.toFixed(digits)} ${UNITS[i] ?? 'TB'}`;
}
