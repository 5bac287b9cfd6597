/** Numbers, sizes, times and places in the words a field crew reads at a glance. */

import { formatBytes } from '../../main/shared/sizes.js';

export { formatBytes };

export function formatRate(bytesPerSecond: number): string {
  if (!Number.isFinite(bytesPerSecond) || bytesPerSecond <= 0) return '–';
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** "~4 min", "~1 h 5 min", "under a minute"; '' when unknown. */
export function formatEta(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '';
  if (seconds < 60) return 'under a minute';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `~${minutes} min`;
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return m === 0 ? `~${h} h` : `~${h} h ${m} min`;
}

/** "45 s", "4 min 12 s", "1 h 5 min". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  const total = Math.round(ms / 1000);
  if (total < 60) return `${total} s`;
  const minutes = Math.floor(total / 60);
  if (minutes < 60) {
    const s = total % 60;
    return s === 0 ? `${minutes} min` : `${minutes} min ${s} s`;
  }
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return m === 0 ? `${h} h` : `${h} h ${m} min`;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' });
const fullFmt = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', year: 'numeric' });

function sameDay(a: Date, b: Date): boolean {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}

/** "Today 14:05", "Yesterday 09:12", "12 Mar 14:05", "12 Mar 2024". */
export function formatWhen(ms: number | null, now: number = Date.now()): string {
  if (ms === null || !Number.isFinite(ms) || ms <= 0) return '–';
  const d = new Date(ms);
  const today = new Date(now);
  const yesterday = new Date(now - 86_400_000);
  if (sameDay(d, today)) return `Today ${timeFmt.format(d)}`;
  if (sameDay(d, yesterday)) return `Yesterday ${timeFmt.format(d)}`;
  if (d.getFullYear() === today.getFullYear()) return `${dayFmt.format(d)} ${timeFmt.format(d)}`;
  return fullFmt.format(d);
}

/** "47.39764° N, 8.54432° E" (5 decimals ≈ 1 m). */
export function formatCoord(point: { lat: number; lng: number } | null): string {
  if (point === null) return '–';
  const lat = `${Math.abs(point.lat).toFixed(5)}° ${point.lat >= 0 ? 'N' : 'S'}`;
  const lng = `${Math.abs(point.lng).toFixed(5)}° ${point.lng >= 0 ? 'E' : 'W'}`;
  return `${lat}, ${lng}`;
}

/** "1 file", "3 files". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}
