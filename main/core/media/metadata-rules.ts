/**
 * Rules that turn exifr's raw blocks into what the server wants: position,
 * panorama, original. Kept apart from metadata.ts so each rule is readable
 * (and testable) on its own.
 */

/** One exifr block (ifd0, exif, gps, or an XMP namespace such as 'drone-dji'). */
export type Block = Record<string, unknown>;

/** A trimmed non-empty string, or undefined. Numbers are kept as text (serials). */
export function text(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string') return undefined;
  // eslint-disable-next-line no-control-regex -- EXIF ASCII fields are NUL-padded
  const s = v.replace(/\u0000+$/, '').trim();
  return s === '' ? undefined : s;
}

/**
 * DJI XMP values are signed strings ("+14.687", "-0.30"); exifr already turns
 * most of them into numbers, but not every firmware's spelling, so both are
 * accepted. Anything else (empty, "N/A", NaN) is unknown, never 0.
 */
export function num(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'string' || !/^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$/.test(v)) return undefined;
  return Number(v);
}

/** EXIF rational triplet [deg, min, sec] + ref ('S'/'W' negative) → decimal degrees. */
function dmsToDegrees(dms: unknown, ref: unknown): number | undefined {
  const parts = Array.isArray(dms) ? dms.map(num) : [num(dms)];
  if (parts.length === 0 || parts.some((p) => p === undefined)) return undefined;
  const [d = 0, m = 0, s = 0] = parts as number[];
  const value = d + m / 60 + s / 3600;
  return typeof ref === 'string' && /^[SW]/i.test(ref.trim()) ? -value : value;
}

/** A position a camera really had: in range, and not DJI's 0/0 for "no fix". */
export function validPosition(lat: number | undefined, lng: number | undefined): boolean {
  if (lat === undefined || lng === undefined) return false;
  if (Math.abs(lat) > 90 || Math.abs(lng) > 180) return false;
  // DJI writes 0/0 when it had no GPS fix: that is "unknown", not the Gulf of Guinea.
  return !(lat === 0 && lng === 0);
}

export interface Position {
  lat?: number;
  lng?: number;
  absoluteAltitude?: number;
  relativeAltitude?: number;
  gimbalYaw?: number;
}

/**
 * DJI XMP first (more digits than EXIF rationals, and the only source of
 * relative altitude and gimbal yaw), EXIF GPS as the fallback for position
 * and absolute altitude. Fields stay out when unknown.
 */
export function readPosition(dji: Block, gps: Block, warnings: string[]): Position {
  const out: Position = {};
  const lat = num(dji.GpsLatitude);
  // Some firmware writes the misspelled "GpsLongtitude".
  const lng = num(dji.GpsLongitude) ?? num(dji.GpsLongtitude);
  if (validPosition(lat, lng)) {
    out.lat = lat;
    out.lng = lng;
  } else {
    const exifLat = dmsToDegrees(gps.GPSLatitude, gps.GPSLatitudeRef);
    const exifLng = dmsToDegrees(gps.GPSLongitude, gps.GPSLongitudeRef);
    if (validPosition(exifLat, exifLng)) {
      out.lat = exifLat;
      out.lng = exifLng;
    } else {
      warnings.push('No GPS position in the file.');
    }
  }

  const abs = num(dji.AbsoluteAltitude);
  if (abs !== undefined) out.absoluteAltitude = abs;
  else {
    const alt = num(gps.GPSAltitude);
    // GPSAltitudeRef 1 = below sea level; exifr gives it as a number or a 1-byte array.
    const ref = gps.GPSAltitudeRef;
    const below = ref === 1 || (ArrayBuffer.isView(ref) && (ref as Uint8Array)[0] === 1);
    if (alt !== undefined) out.absoluteAltitude = below ? -alt : alt;
  }
  const rel = num(dji.RelativeAltitude);
  if (rel !== undefined) out.relativeAltitude = rel;
  const yaw = num(dji.GimbalYawDegree);
  if (yaw !== undefined) out.gimbalYaw = yaw;
  return out;
}

const truthy = (v: unknown): boolean => v === true || (typeof v === 'string' && /^true$/i.test(v.trim()));

/**
 * Panorama (sub_file_type 1) when any of: the XMP GPano namespace describes a
 * projection (ProjectionType set, or UsePanoramaViewer true; DJI declares the
 * namespace on every photo, so the declaration alone means nothing); the
 * file sits under a PANORAMA folder of the card (DJI's panorama location,
 * checked on relPath only, so a user's own "panorama" folder above the card
 * root does not count); or the file name has a "_PANO" part.
 */
export function isPanorama(
  name: string,
  relPath: string | undefined,
  blocks: Record<string, Block>,
): boolean {
  const gpano = blocks.GPano ?? {};
  if (text(gpano.ProjectionType) || truthy(gpano.UsePanoramaViewer)) return true;
  if (relPath) {
    const dirs = relPath.split(/[\\/]+/).slice(0, -1);
    if (dirs.some((d) => d.toUpperCase() === 'PANORAMA')) return true;
  }
  return /_PANO(?![A-Z])/i.test(name);
}

const DERIVED_NAME =
  /(?:^|[ _\-.(])(?:edit(?:ed)?|export(?:ed)?|thumb(?:nail)?|preview|resized?|lowres)(?:$|[ _\-.)\d])/i;
const EDITOR =
  /photoshop|lightroom|camera raw|gimp|affinity|darktable|capture one|snapseed|luminar|pix4d|dji terra|thermal analysis/i;

/**
 * isOriginal rule: a file is a camera original unless something says it was
 * made from one: its name (stem) carries an edit/export/thumbnail/preview/
 * resized/lowres word; its XMP records Camera Raw edits (crs:HasSettings or
 * crs:AlreadyApplied true; DJI itself writes both False) or a source it was
 * derived from (xmpMM:DerivedFrom); or EXIF Software / xmp:CreatorTool names
 * editing software (DJI firmware writes a version number there).
 */
export function isDerived(name: string, ifd0: Block, blocks: Record<string, Block>): boolean {
  const stem = name.replace(/\.[^.]*$/, '');
  if (DERIVED_NAME.test(stem)) return true;
  const crs = blocks.crs ?? {};
  if (truthy(crs.HasSettings) || truthy(crs.AlreadyApplied)) return true;
  if (blocks.xmpMM?.DerivedFrom !== undefined) return true;
  const tool = `${text(ifd0.Software) ?? ''} ${text(blocks.xmp?.CreatorTool) ?? ''}`;
  return EDITOR.test(tool);
}
