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

/** Both model keys are required and must be in the server's enum (else Jackson fails). */
function modelKeyError(ext: Obj, known: ReadonlySet<string>): string | undefined {
  for (const k of ['drone_model_key', 'payload_model_key']) {
    const v = ext[k];
    if (typeof v !== 'string') return `ext.${k} must not be null`;
    if (!known.has(v)) return `Cannot deserialize value of type DeviceEnum from String "${v}"`;
  }
  return undefined;
}

/** Stricter than the contract: name and a full ext are required. */
export function fastUploadError(b: Obj, known: ReadonlySet<string>): string | undefined {
  const fp = b['fingerprint'];
  if (typeof fp !== 'string' || fp === '') return 'fingerprint must not be blank';
  if (typeof b['name'] !== 'string') return 'name must not be null';
  const ext = b['ext'];
  if (!isObj(ext)) return 'ext must not be null';
  for (const k of ['is_original', 'tinny_fingerprint', 'sn']) {
    if (ext[k] === undefined || ext[k] === null) return `ext.${k} must not be null`;
  }
  return modelKeyError(ext, known);
}

/** Five fields plus ext.file_group_id are required; created_time without fractions, with an offset. */
export function callbackError(b: Obj, known: ReadonlySet<string>): string | undefined {
  for (const k of ['fingerprint', 'name', 'object_key', 'sub_file_type', 'metadata', 'ext']) {
    if (b[k] === undefined || b[k] === null) return `${k} must not be null`;
  }
  const ext = b['ext'];
  const meta = b['metadata'];
  if (!isObj(ext) || !('file_group_id' in ext)) return 'ext.file_group_id must not be null';
  const created = isObj(meta) ? meta['created_time'] : undefined;
  if (typeof created !== 'string' || !CREATED_TIME.test(created)) {
    return 'Cannot deserialize value of type `java.time.LocalDateTime` from metadata.created_time';
  }
  return modelKeyError(ext, known);
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
