// Medians, ranges and the Markdown tables of the benchmark.

/** { median, min, max, values } of the finite numbers in `values`, or null. */
export function summarize(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x));
  if (v.length === 0) return null;
  const s = [...v].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], values: v };
}

function digits(x) {
  const a = Math.abs(x);
  return a >= 100 ? 0 : a >= 10 ? 1 : 2;
}

/** "12.3 (11.9–13.0)", or "12.3" for one round, or "n/a". */
export function fmt(s, d) {
  if (!s) return 'n/a';
  const k = d ?? digits(s.median);
  const m = s.median.toFixed(k);
  return s.min === s.max ? m : `${m} (${s.min.toFixed(k)}–${s.max.toFixed(k)})`;
}

export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

const GiB = 1024 ** 3;
const MiBf = 1024 ** 2;
export function sizeText(bytes) {
  if (bytes >= GiB) return `${+(bytes / GiB).toFixed(2)} GiB`;
  if (bytes >= MiBf) return `${+(bytes / MiBf).toFixed(1)} MiB`;
  return `${+(bytes / 1024).toFixed(1)} KiB`;
}

/** Whether a target is met, on the median. */
export function verdict(s, op, target) {
  if (!s) return 'n/a';
  const ok = op === '<=' ? s.median <= target : s.median >= target;
  return ok ? 'yes' : 'NO';
}
