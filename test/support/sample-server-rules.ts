import type { StsResult, Wayline } from '../../main/core/api/types.js';

/**
 * The sample server's validation and paging rules (service-facts.md), kept
 * apart from the HTTP plumbing of sample-server.ts. Each check returns the
 * server's failure message, or undefined when the request is accepted.
 */

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const SAMPLE_STS: StsResult = {
  bucket: 'cloud-bucket',
  endpoint: 'http://127.0.0.1:9000',
  object_key_prefix: 'media',
  provider: 'minio',
  region: 'us-east-1',
  credentials: {
    access_key_id: 'STSACCESSKEY',
    access_key_secret: 'sts-secret-value',
    expire: 3300, // the sample server's 3600 s minus its 300 s margin
    security_token: 'sts-session-token',
  },
};

// Keys from service-facts.md: aircraft (0-*) and payload cameras (1-*).
export const KNOWN_MODEL_KEYS: readonly string[] = [
  ...['0-60-0', '0-89-0', '0-103-0', '0-67-0', '0-67-1', '0-77-0', '0-77-1', '0-77-2', '0-77-3'],
  ...['0-91-0', '0-91-1', '0-99-0', '0-99-1', '0-100-0', '0-100-1', '1-42-0', '1-43-0', '1-61-0'],
  ...['1-82-0', '1-83-0', '1-52-0', '1-53-0', '1-66-0', '1-67-0', '1-68-0', '1-129-0', '1-80-0'],
  ...['1-81-0', '1-88-0', '1-89-0', '1-98-0', '1-99-0', '1-50-65535'],
];

const CREATED_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$/;
const ORDER_BY = /^(name|update_time|create_time) (asc|desc)$/;

/*
 * The table "Exactly which fields the sample server requires" of
 * shared/docs/service-facts.md, row by row: each name is `@NotNull` in DJI's
 * v1.10 request classes. A JSON null or a missing key fails validation with
 * code -1 and "<path>must not be null"; an empty string passes. Jackson runs
 * first: a device key outside DeviceEnum, a sub_file_type other than 0/1, a
 * number that is not a number, fail as "Cannot deserialize ...".
 */
const FAST_UPLOAD_FIELDS = ['fingerprint', 'name', 'ext'];
const FAST_UPLOAD_EXT = ['drone_model_key', 'payload_model_key', 'is_original', 'tinny_fingerprint', 'sn'];
const CALLBACK_FIELDS = ['fingerprint', 'name', 'object_key', 'sub_file_type', 'metadata', 'ext'];
const CALLBACK_EXT = [
  'drone_model_key',
  'payload_model_key',
  'file_group_id',
  'is_original',
  'tinny_fingerprint',
  'sn',
];
const METADATA_FIELDS = [
  'absolute_altitude',
  'relative_altitude',
  'gimbal_yaw_degree',
  'created_time',
  'shoot_position',
];
const POSITION_FIELDS = ['lat', 'lng'];
const DOUBLES = ['absolute_altitude', 'relative_altitude', 'gimbal_yaw_degree'];

const absent = (v: unknown): boolean => v === undefined || v === null;

/** The first field of `names` missing in `o` (JSON null counts as missing), as the validator words it. */
function missing(o: Obj, names: readonly string[], where: string): string | undefined {
  const name = names.find((n) => absent(o[n]));
  return name === undefined ? undefined : `${where}${name}must not be null`;
}

/** Jackson's part: values that cannot become the Java types (DeviceEnum, doubles, the sub-type enum). */
function deserializeError(b: Obj, known: ReadonlySet<string>): string | undefined {
  const ext = isObj(b['ext']) ? b['ext'] : {};
  for (const k of ['drone_model_key', 'payload_model_key']) {
    const v = ext[k];
    if (!absent(v) && (typeof v !== 'string' || !known.has(v))) {
      return `JSON parse error: Cannot deserialize value of type \`DeviceEnum\` from String "${String(v)}": not one of the values accepted for Enum class`;
    }
  }
  if (!absent(b['sub_file_type']) && b['sub_file_type'] !== 0 && b['sub_file_type'] !== 1) {
    return `JSON parse error: Cannot deserialize value of type \`MediaSubTypeEnum\` from ${String(b['sub_file_type'])}`;
  }
  const meta = isObj(b['metadata']) ? b['metadata'] : {};
  const pos = isObj(meta['shoot_position']) ? meta['shoot_position'] : {};
  for (const [o, k] of [
    ...DOUBLES.map((d) => [meta, d] as const),
    ...POSITION_FIELDS.map((p) => [pos, p] as const),
  ]) {
    const v = o[k];
    if (!absent(v) && typeof v !== 'number')
      return `JSON parse error: Cannot deserialize value of type \`java.lang.Double\` from ${JSON.stringify(v)}`;
  }
  if (typeof meta['created_time'] === 'string' && !CREATED_TIME.test(meta['created_time'])) {
    return `JSON parse error: Cannot deserialize value of type \`java.time.LocalDateTime\` from String "${meta['created_time']}"`;
  }
  return undefined;
}

/** fast-upload (MediaFastUploadRequest + FastUploadExtension). */
export function fastUploadError(b: Obj, known: ReadonlySet<string>): string | undefined {
  const bad = deserializeError(b, known);
  if (bad !== undefined) return bad;
  return missing(b, FAST_UPLOAD_FIELDS, '') ?? missing(b['ext'] as Obj, FAST_UPLOAD_EXT, 'ext.');
}

/** upload-callback (MediaUploadCallbackRequest + MediaFileExtension + MediaFileMetadata + Position). */
export function callbackError(b: Obj, known: ReadonlySet<string>): string | undefined {
  const bad = deserializeError(b, known);
  if (bad !== undefined) return bad;
  const top = missing(b, CALLBACK_FIELDS, '');
  if (top !== undefined) return top;
  const meta = b['metadata'] as Obj;
  return (
    missing(b['ext'] as Obj, CALLBACK_EXT, 'ext.') ??
    missing(meta, METADATA_FIELDS, 'metadata.') ??
    missing(meta['shoot_position'] as Obj, POSITION_FIELDS, 'metadata.shoot_position.')
  );
}

/** sts reads no body at all; a client that sends one relies on something the server ignores. */
export function stsError(body: unknown): string | undefined {
  return body === undefined ? undefined : 'sts takes no request body (getTemporaryCredential reads none)';
}

/** order_by is required; page 1 and page_size 10 by default; filters as the sample server applies them. */
export function waylinePage(
  waylines: readonly Wayline[],
  q: URLSearchParams,
): { error: string } | { list: Wayline[]; pagination: { page: number; page_size: number; total: number } } {
  const orderBy = q.get('order_by');
  if (orderBy === null || !ORDER_BY.test(orderBy)) {
    return { error: 'order_by must match (name|update_time|create_time) (asc|desc)' };
  }
  const page = Number(q.get('page') ?? 1);
  const size = Number(q.get('page_size') ?? 10);
  const [col = 'update_time', dir] = orderBy.split(' ');
  const tt = q.getAll('template_type').map(Number);
  const drones = q.getAll('drone_model_keys');
  const payloads = q.getAll('payload_model_key');
  const fav = q.get('favorited');
  const action = q.get('action_type');
  const match = waylines
    .filter((w) => fav === null || w.favorited === (fav === 'true'))
    .filter((w) => action === null || w.action_type === Number(action))
    .filter((w) => tt.length === 0 || (w.template_types ?? []).some((t) => tt.includes(t)))
    .filter((w) => drones.length === 0 || drones.includes(w.drone_model_key ?? ''))
    .filter((w) => payloads.length === 0 || (w.payload_model_keys ?? []).some((p) => payloads.includes(p)))
    .sort((a, b) => {
      const x = a[col] as string | number | undefined;
      const y = b[col] as string | number | undefined;
      const c = x === y ? 0 : x === undefined || (y !== undefined && x < y) ? -1 : 1;
      return dir === 'desc' ? -c : c;
    });
  const list = match.slice((page - 1) * size, page * size);
  return { list, pagination: { page, page_size: size, total: match.length } };
}
