/**
 * The card's offload report, for people: `reportJson` (what `report --json`
 * prints, versioned) and `renderReportHtml`, one self-contained page a crew
 * lead opens and prints: the verdict at the top, then per flight a summary
 * table, its flags and a static SVG map, then every file.
 *
 * Self-contained on purpose: inline CSS, inline SVG, no script, no font, no
 * image and no link that would load anything, so it opens offline, prints
 * the same everywhere, and a strict viewer (CSP default-src 'none') shows it
 * whole. The page declares that policy itself. Every string that comes from
 * the card or a server (file names, folder and mission names, errors) is
 * escaped: file names are hostile input.
 */
import { deviceName } from '../../shared/domain.js';
import { POINT_STYLES, fitPoints, pointStyle, scaleBar } from '../../shared/flight-map.js';
import type { LocalVerdict } from '../copies/locally-safe.js';
import type { FlightPointView } from '../../shared/flight-map.js';
import { visible } from '../../shared/visible.js';
import { baseName, count } from './plain.js';
import { flightPoints } from './points.js';
import type { FileStates } from './points.js';
import { RTK_KIND_LABELS } from '../media/rtk-files.js';
import type { RtkKind } from '../media/rtk-files.js';
import type { FlightCompleteness, ManifestFile, OffloadReportInput, SafeToFormatVerdict } from './types.js';

export const REPORT_FORMAT = 'drone-media-sync/offload-report';
export const REPORT_VERSION = 1;

export type FlightReport = Omit<FlightCompleteness, 'exposures'> & { points: FlightPointView[] };

export interface OffloadReport {
  format: typeof REPORT_FORMAT;
  version: typeof REPORT_VERSION;
  createdAt: string;
  card: OffloadReportInput['card'];
  target: OffloadReportInput['target'];
  tool: OffloadReportInput['tool'];
  hostname: string;
  /** The ASC MHL file of this generation, relative to the card root, if written. */
  hashList: string | null;
  /** Safe to format: locally safe or in the workspace. */
  safe: boolean;
  message: string;
  /** In the workspace: acknowledged and checked in its bucket. */
  verdict: SafeToFormatVerdict;
  /** On the local destinations, each copy read back (null: no destination). */
  local: LocalVerdict | null;
  flights: FlightReport[];
  files: ManifestFile[];
}

/** The report as data (also the input of the HTML page). */
export function reportJson(input: OffloadReportInput, hashList: string | null = null): OffloadReport {
  const states: FileStates = Object.fromEntries(
    input.files.map((f) => [f.relPath, { state: f.state, error: f.error ?? null }]),
  );
  return {
    format: REPORT_FORMAT,
    version: REPORT_VERSION,
    createdAt: input.createdAt,
    card: input.card,
    target: input.target,
    tool: input.tool,
    hostname: input.hostname,
    hashList,
    safe: input.safe ?? input.verdict.safe,
    message: input.message ?? input.verdict.message,
    verdict: input.verdict,
    local: input.local ?? null,
    flights: input.flights.map(({ exposures: _exposures, ...f }) => ({
      ...f,
      points: flightPoints({ ...f, exposures: _exposures }, states),
    })),
    files: [...input.files].sort((a, b) => (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0)),
  };
}

/** Escapes text for HTML content and quoted attributes. */
export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Outside text (names, messages) shown as text: controls and bidi overrides made visible, then escaped. */
const e = (value: unknown): string => escapeHtml(visible(value));
const num = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : '');

function size(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

const MAP_W = 640;
const MAP_H = 360;

/** A static map: track, points coloured by state, gimbal ticks, wayline start, scale bar, north arrow, legend. */
export function flightSvg(f: FlightReport): string {
  const located = f.points;
  const start = f.wayline?.start ?? null;
  const fit = fitPoints(start ? [...located, start] : located, MAP_W, MAP_H, 36);
  const parts: string[] = [];
  const track = [...located].filter((p) => p.index !== null).sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  if (track.length > 1) {
    const d = track
      .map((p, i) => `${i === 0 ? 'M' : 'L'}${num(fit.project(p).x, 1)} ${num(fit.project(p).y, 1)}`)
      .join(' ');
    parts.push(`<path d="${d}" fill="none" stroke="#57606a" stroke-width="1.5" stroke-dasharray="4 3"/>`);
  }
  if (start) {
    const s = fit.project(start);
    parts.push(
      `<g class="wayline-start"><rect x="${num(s.x - 7, 1)}" y="${num(s.y - 7, 1)}" width="14" height="14" fill="#fff" stroke="#24292f" stroke-width="2" transform="rotate(45 ${num(s.x, 1)} ${num(s.y, 1)})"/><title>Wayline start: ${e(f.wayline?.name ?? '')}</title></g>`,
    );
  }
  for (const p of located) {
    const { x, y } = fit.project(p);
    const style = pointStyle(p.state);
    if (p.gimbalYaw !== null) {
      const r = (p.gimbalYaw * Math.PI) / 180;
      parts.push(
        `<line x1="${num(x, 1)}" y1="${num(y, 1)}" x2="${num(x + 14 * Math.sin(r), 1)}" y2="${num(y - 14 * Math.cos(r), 1)}" stroke="${style.colour}" stroke-width="2"/>`,
      );
    }
    const title = `${p.index ?? ''} ${p.files.join(', ')}${p.problem ? ` — ${p.problem}` : ''}`;
    const shape =
      p.state === 'missing'
        ? `<rect x="${num(x - 6, 1)}" y="${num(y - 6, 1)}" width="12" height="12" fill="#fff" stroke="${style.colour}" stroke-width="3"/>`
        : `<circle cx="${num(x, 1)}" cy="${num(y, 1)}" r="6" fill="${style.colour}" stroke="#fff" stroke-width="1.5"/>`;
    parts.push(`<g class="point" data-state="${p.state}">${shape}<title>${e(title)}</title></g>`);
  }
  const bar = scaleBar(fit.metresPerPixel, 140);
  const by = MAP_H - 18;
  parts.push(
    `<g class="scale"><rect x="12" y="${by - 16}" width="${num(bar.px + 16, 1)}" height="26" fill="#fff" opacity="0.85"/><path d="M20 ${by - 6} V${by} H${num(20 + bar.px, 1)} V${by - 6}" fill="none" stroke="#24292f" stroke-width="2"/><text x="${num(20 + bar.px / 2, 1)}" y="${by - 5}" text-anchor="middle">${e(bar.label)}</text></g>`,
    `<g class="north" transform="translate(${MAP_W - 28} 34)"><path d="M0 -18 L8 8 L0 3 L-8 8 Z" fill="#24292f"/><text y="22" text-anchor="middle">N</text></g>`,
  );
  return `<svg class="map" viewBox="0 0 ${MAP_W} ${MAP_H}" width="${MAP_W}" height="${MAP_H}" role="img" aria-label="Map of flight ${e(baseName(f.folder))}: ${located.length} positions"><rect width="100%" height="100%" fill="#f6f8fa"/>${parts.join('')}</svg>`;
}

function legend(): string {
  return `<ul class="legend">${POINT_STYLES.map(
    (s) =>
      `<li><span class="swatch${s.state === 'missing' ? ' square' : ''}" style="--c:${s.colour}"></span>${e(s.label)}</li>`,
  ).join('')}<li><span class="swatch diamond"></span>Wayline start</li></ul>`;
}

/** "Matrice 30T", "Matrice 30T with Zenmuse H20T": the names of a file's aircraft and camera. */
function deviceOfFile(f: ManifestFile): string {
  const aircraft = f.aircraft?.modelKey ? deviceName(f.aircraft.modelKey) : null;
  const camera = f.camera?.payloadKey ? deviceName(f.camera.payloadKey) : (f.camera?.model ?? null);
  // A built-in camera is named after its aircraft: saying it twice says nothing.
  if (aircraft && camera && !camera.startsWith(aircraft)) return `${aircraft} with ${camera}`;
  return aircraft ?? camera ?? '';
}

const folderOf = (relPath: string): string => relPath.replace(/\\/g, '/').split('/').slice(0, -1).join('/');

/** The aircraft and cameras of each folder's files, in the order of the files (one pass over the card). */
function devicesByFolder(
  files: readonly ManifestFile[],
  folders: ReadonlySet<string>,
): Map<string, string[]> {
  const sets = new Map<string, Set<string>>();
  for (const x of files) {
    const folder = folderOf(x.relPath);
    if (!folders.has(folder)) continue;
    let set = sets.get(folder);
    if (!set) sets.set(folder, (set = new Set()));
    set.add(deviceOfFile(x));
  }
  return new Map([...sets].map(([folder, set]) => [folder, [...set].filter(Boolean)]));
}

function flightSection(f: FlightReport, devices: readonly string[]): string {
  const rtk = f.rtkCounts;
  const rows: Array<[string, string]> = [
    ...summaryRows(f),
    ['Mission', f.missionName ?? 'manual flight'],
    ['Wayline', f.wayline ? f.wayline.name : 'not matched'],
    ['Aircraft', devices.length ? devices.join('; ') : 'not known'],
    [
      'Photos',
      `${f.photos} (${count(f.exposuresFound, 'exposure')})${f.videos ? `, ${count(f.videos, 'video')}` : ''}`,
    ],
    ['Exposures in the MRK', f.exposuresInMrk === null ? 'no MRK' : String(f.exposuresInMrk)],
    ['Missing (in the MRK, no photo)', f.missingIndexes.length ? f.missingIndexes.join(', ') : 'none'],
    ['Photos not in the MRK', f.extraIndexes.length ? f.extraIndexes.join(', ') : 'none'],
    [
      'RTK fixes',
      rtk
        ? `${rtk.fixed} fixed, ${rtk.float} float, ${rtk.single + rtk.none} single/none${rtk.other ? `, ${rtk.other} other` : ''}`
        : '—',
    ],
    ['Photos without position', String(f.photosWithoutPosition.length)],
    ['Usual interval', f.usualIntervalSeconds === null ? '—' : `${f.usualIntervalSeconds} s`],
    [
      'Time gaps',
      f.gaps.length ? f.gaps.map((g) => `${g.seconds} s after ${g.afterIndex}`).join(', ') : 'none',
    ],
    [
      'RTK files',
      (Object.keys(f.rtkFiles) as RtkKind[])
        .filter((k) => f.rtkFiles[k].length > 0)
        .map((k) => `${RTK_KIND_LABELS[k]}: ${f.rtkFiles[k].map(baseName).join(', ')}`)
        .join('; ') || 'none',
    ],
  ];
  const notes = [...f.flags.map((x) => ({ severity: x.severity, message: x.message }))];
  if (devices.length > 1)
    notes.push({
      severity: 'warning',
      message: `Files of ${devices.length} different aircraft or cameras (${devices.join('; ')}): one flight is flown by one aircraft. Check that this folder holds what you expect.`,
    });
  const flags = notes.length
    ? `<ul class="flags">${notes.map((x) => `<li class="${x.severity}"><strong>${x.severity === 'incomplete' ? 'Incomplete' : 'Note'}:</strong> ${e(x.message)}</li>`).join('')}</ul>`
    : f.exposuresInMrk === null
      ? '<p class="ok">Nothing to note (no exposure log to check the photos against).</p>'
      : '<p class="ok">Complete: every exposure of the log has its photo, and nothing to note.</p>';
  return `<section class="flight"><h2>${e(f.name ?? baseName(f.folder))}${f.incomplete ? ' <span class="tag bad">incomplete</span>' : ' <span class="tag good">complete</span>'}${toLookAt(f)}</h2>
<div class="flight-body"><table class="summary">${rows.map(([k, v]) => `<tr><th>${e(k)}</th><td>${e(v)}</td></tr>`).join('')}</table>
<figure>${flightSvg(f)}<figcaption>${legend()}</figcaption></figure></div>${flags}${flightChecks(f)}</section>`;
}

/** "4 photos to look at" beside the flight's name: complete or not, its frames may be unusable. */
function toLookAt(f: FlightReport): string {
  const n = (f.frames ?? []).filter((x) => x.unusable).length;
  return n ? ` <span class="tag bad">${count(n, 'photo')} to look at</span>` : '';
}

/** The GPS time of an exposure in the zone the photo states ("2024-05-06 10:15:24+02:00"), and in UTC. */
function gpsTimeText(utcIso: string, capturedAt: string | null): string {
  const utc = Date.parse(utcIso);
  const m = /([+-])(\d{2}):?(\d{2})$/.exec(capturedAt ?? '');
  const plain = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  if (!m) return `${plain(utc)} UTC`;
  const offset = (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60_000;
  return `${plain(utc + offset)}${m[0]} (${plain(utc).slice(11)} UTC)`;
}

/** When, how high, how much ground, which exposure log: the flight's own figures (summary.ts). */
function summaryRows(f: FlightReport): Array<[string, string]> {
  const s = f.summary;
  if (!s) return [];
  const t = (iso: string) => iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
  return [
    ['Flown', s.start && s.end ? `${t(s.start)} to ${t(s.end).slice(11)}` : 'not known'],
    [
      'Height above take-off',
      s.heightMin !== null && s.heightMax !== null
        ? `${Math.round(s.heightMin * 10) / 10} to ${Math.round(s.heightMax * 10) / 10} m`
        : 'not known',
    ],
    ['Area covered', s.areaHectares !== null ? `${s.areaHectares} ha` : '—'],
    ['Exposure log (MRK)', s.mrk.length ? s.mrk.map(baseName).join(', ') : 'none'],
  ];
}

/**
 * The photos of a flight worth a look (frames.ts) and its camera clock
 * (clock.ts): each named with why, camera time and GPS time side by side.
 * Nothing was deleted or held back.
 */
export function flightChecks(f: FlightReport): string {
  const frames = f.frames ?? [];
  const clock = f.clock ?? { findings: [], notes: [], corrected: {} };
  if (frames.length === 0 && clock.findings.length === 0 && clock.notes.length === 0) return '';
  const rows = frames
    .map(
      (x) =>
        `<tr class="${x.unusable ? 'unusable' : 'hint'}"><td class="path">${e(baseName(x.relPath))}</td><td>${x.index ?? ''}</td><td>${e(x.capturedAt ?? '')}</td><td>${clock.corrected[x.relPath] ? e(gpsTimeText(clock.corrected[x.relPath]!, x.capturedAt)) : ''}</td><td>${x.reasons.map((r) => e(r.message)).join('<br>')}</td></tr>`,
    )
    .join('');
  const bad = frames.filter((x) => x.unusable).length;
  return `<div class="checks"><h3>Photos to look at: ${bad} probably unusable${frames.length > bad ? `, ${frames.length - bad} worth a look` : ''}</h3>${
    frames.length
      ? `<table class="frames"><thead><tr><th>Photo</th><th>Exposure</th><th>Camera time (as the file says, sent)</th><th>GPS time (corrected)</th><th>Why</th></tr></thead><tbody>${rows}</tbody></table>`
      : ''
  }${clock.notes.map((m) => `<p class="clock">${e(m)}</p>`).join('')}<p class="meta">Nothing was deleted or held back: the photos stay on the card, in the copies and in the upload.</p></div>`;
}

function fileRow(f: ManifestFile, corrected: Readonly<Record<string, string>> = {}): string {
  const gps = corrected[f.relPath];
  const pos = f.position ? `${num(f.position.lat, 7)}, ${num(f.position.lng, 7)}` : '';
  const ack = f.acknowledged ? `${f.acknowledged.how}, ${f.acknowledged.at}` : '';
  const v = f.verified;
  const check = !v
    ? 'not checked'
    : !v.found
      ? 'NOT IN BUCKET'
      : !v.sizeMatches || v.checksum === 'mismatch'
        ? 'DIFFERS'
        : v.checksum === 'match'
          ? 'size + MD5'
          : 'size';
  const device = [deviceOfFile(f), f.aircraft?.serial, f.camera?.serial].filter(Boolean).join(' · ');
  return `<tr class="state-${e(f.state)}"><td class="path">${e(f.relPath)}</td><td>${e(f.kind)}</td><td class="n">${e(size(f.size))}</td><td class="md5">${e(f.md5)}</td><td>${e(f.capturedAt ?? '')}${gps ? `<br><span class="clock">GPS: ${e(gpsTimeText(gps, f.capturedAt ?? null))}</span>` : ''}</td><td>${e(pos)}</td><td>${e(device)}</td><td>${e(f.state)}${f.error ? `: ${e(f.error)}` : ''}</td><td>${e(ack)}</td><td>${e(check)}</td><td class="path">${e(f.objectKey ?? '')}</td></tr>`;
}

const CSS = `
:root{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#24292f}
body{margin:24px auto;max-width:1280px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 8px}
.meta{color:#57606a;margin:0 0 16px}
.verdict{border-radius:8px;padding:12px 16px;margin:0 0 20px;border:2px solid}
.verdict.safe{background:#dafbe1;border-color:#1a7f37}.verdict.unsafe{background:#ffebe9;border-color:#cf222e}
.verdict h2{font-size:20px;margin:0 0 4px}.advisory{background:#fff8c5;border-radius:6px;padding:6px 10px}.verdict ul{margin:6px 0 0;padding-left:20px}
.counts{display:flex;gap:16px;flex-wrap:wrap;margin:0 0 20px;padding:0;list-style:none}
.counts li{background:#f6f8fa;border-radius:6px;padding:6px 10px}
.flight{border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;margin:0 0 20px;break-inside:avoid}
.flight-body{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap}
table{border-collapse:collapse}th,td{text-align:left;vertical-align:top;padding:3px 8px;border-bottom:1px solid #eaeef2}
.summary{width:520px;flex:0 0 520px}.summary th{color:#57606a;font-weight:600;white-space:nowrap}.summary td{overflow-wrap:anywhere}
figure{margin:0}.map{border:1px solid #d0d7de;border-radius:6px;max-width:100%;height:auto}
.map text{font:12px system-ui,sans-serif;fill:#24292f}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;list-style:none;padding:0;margin:6px 0 0;max-width:640px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:50%;background:var(--c);margin-right:5px;vertical-align:-1px}
.swatch.square{border-radius:0;background:#fff;border:2px solid var(--c);width:7px;height:7px}
.swatch.diamond{border-radius:0;background:#fff;border:2px solid #24292f;width:7px;height:7px;transform:rotate(45deg)}
.flags{padding-left:20px;margin:10px 0 0}.flags .incomplete{color:#a40e26}.ok{color:#1a7f37;margin:10px 0 0}
.tag{font-size:12px;border-radius:10px;padding:1px 8px;vertical-align:2px}.tag.bad{background:#ffebe9;color:#a40e26}.tag.good{background:#dafbe1;color:#116329}
.files{width:100%;font-size:11px}.files .path,.files .md5{overflow-wrap:anywhere;font-family:ui-monospace,Menlo,Consolas,monospace}
.files .n{white-space:nowrap;text-align:right}.files tr.state-failed td{background:#ffebe9}
footer{color:#57606a;margin-top:20px}
.checks{margin:12px 0 0}.checks h3{font-size:14px;margin:0 0 6px}.frames{font-size:12px}.frames tr.unusable td:first-child{border-left:4px solid #24292f}
.frames tr.hint td:first-child{border-left:4px solid #d4a72c}.clock{color:#a40e26;margin:6px 0 0}
@media print{body{margin:0;max-width:none}.flight{page-break-inside:avoid}.files{font-size:9px}}
`;

/** relPath -> GPS time (UTC) of the photos whose camera clock is off, over all flights. */
const correctedTimes = (r: OffloadReport): Record<string, string> =>
  Object.assign({}, ...r.flights.map((f) => f.clock?.corrected ?? {})) as Record<string, string>;

/** The verdict's advisory third line (advisory.ts): never part of safe or not. */
const advisoryLine = (v: SafeToFormatVerdict): string =>
  v.advisory ? `<p class="advisory"><strong>Look before you leave:</strong> ${e(v.advisory)}</p>` : '';

const reasonList = (reasons: readonly string[]): string =>
  reasons.length ? `<ul>${reasons.map((x) => `<li>${e(x)}</li>`).join('')}</ul>` : '';

/** The printable page. */
export function renderReportHtml(r: OffloadReport): string {
  return [...reportHtmlPieces(r)].join('');
}

/**
 * The printable page in pieces: its head, then one flight, then one file's
 * row at a time (a 10,000-file card's page is some 4 MB, written to its file
 * as it is made, never held whole).
 */
export function* reportHtmlPieces(r: OffloadReport): Generator<string> {
  const v = r.verdict;
  const c = v.counts;
  const title = `Offload report — ${r.card.label}`;
  const corrected = correctedTimes(r);
  yield `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)}</title><style>${CSS}</style></head><body>
<h1>${e(title)}</h1>
<p class="meta">${e(r.createdAt)} · ${e(r.target.workspaceLabel)}${r.target.serverLabel !== r.target.workspaceLabel ? ` on ${e(r.target.serverLabel)}` : ''} · ${e(r.tool.name)} ${e(r.tool.version)} on ${e(r.hostname)}</p>
<div class="verdict ${r.safe ? 'safe' : 'unsafe'}" role="status"><h2>${r.safe ? 'Safe to format' : 'Not safe to format yet'}</h2><p>${e(r.message)}</p>${advisoryLine(v)}${
    r.local ? '' : reasonList(v.reasons)
  }</div>${
    r.local
      ? `<div class="verdict ${r.local.safe ? 'safe' : 'unsafe'}"><h2>Local copies</h2><p>${e(r.local.message)}</p>${reasonList(r.local.reasons)}<p class="meta">${
          r.local.readBack === 'direct'
            ? 'Each copy was read back from its disk (O_DIRECT, around the operating system cache) and compared with the card.'
            : r.local.readBack === 'cache'
              ? 'Some copies were read back through the operating system cache: this system or file system does not allow reading around it.'
              : ''
        }</p></div>
<div class="verdict ${v.safe ? 'safe' : 'unsafe'}"><h2>In the workspace</h2><p>${e(v.message)}</p>${reasonList(v.reasons)}</div>`
      : ''
  }
<ul class="counts"><li>${count(c.files, 'file')} (${c.media} media, ${c.rtk} RTK)</li><li>${c.verified} verified</li><li>${c.pending} on the way</li><li>${c.waiting} waiting for the card</li><li>${c.failed} failed</li><li>${count(c.flights, 'flight')}, ${c.flightsIncomplete} incomplete${c.flightsAccepted ? ` (${c.flightsAccepted} accepted)` : ''}</li></ul>
`;
  const devices = devicesByFolder(r.files, new Set(r.flights.map((f) => f.folder)));
  for (const [i, f] of r.flights.entries())
    yield `${i ? '\n' : ''}${flightSection(f, devices.get(f.folder) ?? [])}`;
  yield `
<section><h2>Files</h2><table class="files"><thead><tr><th>Path on the card</th><th>Kind</th><th>Size</th><th>MD5</th><th>Captured</th><th>Position</th><th>Aircraft · camera</th><th>State</th><th>Acknowledged</th><th>Bucket check</th><th>Object key</th></tr></thead>
<tbody>`;
  for (const [i, f] of r.files.entries()) yield `${i ? '\n' : ''}${fileRow(f, corrected)}`;
  yield `</tbody></table></section>
<footer>${r.hashList ? `Hash list (ASC MHL v2.0): ${e(r.hashList)}. ` : ''}Report format ${REPORT_FORMAT} v${REPORT_VERSION}.</footer>
</body></html>
`;
}

/**
 * `JSON.stringify(report, null, 2)` and a newline, in pieces: the arrays of
 * the report (every file, every flight) one element at a time, so that a
 * 10,000-file card's 10 MB of JSON is written as it is made.
 */
export function* reportJsonPieces(r: OffloadReport): Generator<string> {
  const indent = (text: string, by: string): string => text.replace(/\n/g, `\n${by}`);
  const entries = Object.entries(r).filter(([, value]) => value !== undefined);
  yield '{\n';
  for (const [i, [key, value]] of entries.entries()) {
    yield `  ${JSON.stringify(key)}: `;
    if (Array.isArray(value) && value.length > 0) {
      yield '[\n';
      for (const [j, item] of (value as unknown[]).entries())
        yield `    ${indent(JSON.stringify(item, null, 2) ?? 'null', '    ')}${j < value.length - 1 ? ',' : ''}\n`;
      yield '  ]';
    } else yield indent(JSON.stringify(value, null, 2), '  ');
    yield i < entries.length - 1 ? ',\n' : '\n';
  }
  yield '}\n';
}
