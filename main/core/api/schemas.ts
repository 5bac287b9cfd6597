import type { z as Z } from 'zod';
import { DmsError } from '../errors.js';
import { checkStorageSettings } from '../storage/settings.js';
import type { RequestContext } from './envelope.js';
import { STORAGE_PROVIDERS } from './types.js';
import type { LoginResult, StsResult, WaylinePage, WaylineQuery } from './types.js';
import { lazySchema } from '../zod.js';

/**
 * Shapes of the `data` of successful answers. Tolerant where real servers
 * vary (numbers as numeric strings, extra fields, a wrong-typed optional
 * field of a wayline is dropped rather than losing the whole page), strict
 * where a wrong value would do harm (credentials, provider, token).
 */

/** Built at their first use (zod.ts): a run that asks the server nothing never loads zod. */
const schemas = lazySchema((z) => {
  const numLike = z.union([
    z.number(),
    z
      .string()
      .regex(/^\s*-?\d+(\.\d+)?\s*$/)
      .transform(Number),
  ]);
  const idLike = z.union([z.string(), z.number().transform(String)]);
  /** An optional field whose wrong type is dropped instead of failing the item. */
  const opt = <T extends Z.ZodType>(s: T) => s.optional().catch(undefined);

  const waylineItem = z.looseObject({
    id: opt(idLike),
    name: opt(z.string()),
    drone_model_key: opt(z.string()),
    payload_model_keys: opt(z.array(z.string())),
    template_types: opt(z.array(numLike)),
    favorited: opt(z.boolean()),
    action_type: opt(numLike),
    update_time: opt(numLike),
    user_name: opt(z.string()),
    start_wayline_point: opt(z.looseObject({ start_latitude: opt(numLike), start_lontitude: opt(numLike) })),
  });

  const waylineData = z.looseObject({
    list: z.array(waylineItem),
    pagination: opt(z.looseObject({ page: opt(numLike), page_size: opt(numLike), total: opt(numLike) })),
  });

  const credentialsShape = z.looseObject({
    access_key_id: z.string().min(1),
    access_key_secret: z.string().min(1),
  });

  const stsData = z.looseObject({
    bucket: z.string().min(1),
    endpoint: z.string().min(1),
    // Lower-cased: the three names are fixed, their case is not worth a failure.
    provider: z
      .string()
      .transform((p) => p.trim().toLowerCase())
      .pipe(z.enum(STORAGE_PROVIDERS)),
    object_key_prefix: z.string().optional().default(''),
    region: z.string().optional().default(''),
    credentials: z.looseObject({
      expire: numLike,
      // Static-key setups may send no session token; '' means "none".
      security_token: z.string().optional().default(''),
    }),
  });

  const loginData = z.looseObject({
    access_token: z.string().min(1),
    workspace_id: idLike.pipe(z.string().min(1)),
    username: opt(z.string()),
  });
  return { waylineData, credentialsShape, stsData, loginData };
});

/** Names the wrong fields (paths only: values could be secrets). */
function malformed(ctx: RequestContext, what: string, error: Z.ZodError): DmsError {
  const fields = [...new Set(error.issues.map((i) => ['data', ...i.path.map(String)].join('.')))].slice(0, 6);
  return new DmsError(
    'malformed-response',
    `The answer to ${ctx.method} ${ctx.path} is not a valid ${what}: missing or wrong ${fields.join(', ')}.`,
    { method: ctx.method, path: ctx.path, status: 200 },
  );
}

export function parseWaylinePage(data: unknown, query: WaylineQuery, ctx: RequestContext): WaylinePage {
  const r = schemas().waylineData.safeParse(data);
  if (!r.success) throw malformed(ctx, 'wayline page', r.error);
  const list = r.data.list;
  const p = r.data.pagination ?? {};
  const page = p.page ?? query.page ?? 1;
  const pageSize = p.page_size ?? query.page_size ?? 10;
  // Without a total, what we have seen so far is the best lower bound.
  const total = p.total ?? (page - 1) * pageSize + list.length;
  return { list, pagination: { page, page_size: pageSize, total } };
}

export function parseSts(data: unknown, ctx: RequestContext): StsResult {
  const creds = schemas().credentialsShape.safeParse(
    typeof data === 'object' && data !== null ? (data as Record<string, unknown>)['credentials'] : undefined,
  );
  if (!creds.success) {
    // The sample server answers code 0 without credentials when its storage
    // provider is misconfigured: a server fault, not empty credentials.
    throw new DmsError(
      'server',
      `The server returned no storage credentials; its storage is probably misconfigured (${ctx.method} ${ctx.path}).`,
      { method: ctx.method, path: ctx.path, status: 200 },
    );
  }
  const r = schemas().stsData.safeParse(data);
  if (!r.success) throw malformed(ctx, 'storage credentials answer', r.error);
  const d = r.data;
  // Before the first byte: a bucket, endpoint, region or prefix that could send
  // the card elsewhere than the workspace's folder is refused here.
  checkStorageSettings(
    {
      provider: d.provider,
      bucket: d.bucket,
      endpoint: d.endpoint,
      region: d.region,
      objectKeyPrefix: d.object_key_prefix,
    },
    ctx,
  );
  return {
    bucket: d.bucket,
    endpoint: d.endpoint,
    provider: d.provider,
    object_key_prefix: d.object_key_prefix,
    region: d.region,
    credentials: {
      access_key_id: creds.data.access_key_id,
      access_key_secret: creds.data.access_key_secret,
      expire: d.credentials.expire,
      security_token: d.credentials.security_token,
    },
  };
}

export function parseLogin(data: unknown, ctx: RequestContext): LoginResult {
  const r = schemas().loginData.safeParse(data);
  if (!r.success) throw malformed(ctx, 'sign-in answer', r.error);
  return r.data;
}

/** The new token of a refresh: `data.access_token`, or `data` itself when a server sends the bare string. */
export function parseRefreshedToken(data: unknown, ctx: RequestContext): string {
  if (typeof data === 'string' && data.trim() !== '') return data.trim();
  const r = schemas().loginData.pick({ access_token: true }).safeParse(data);
  if (!r.success) throw malformed(ctx, 'token refresh answer', r.error);
  return r.data.access_token;
}

/** upload-callback `data`: `{object_key}`, the bare key, or nothing (then the key we sent). */
export function parseCallbackKey(data: unknown, sentKey: string): string {
  if (typeof data === 'string' && data.trim() !== '') return data.trim();
  if (typeof data === 'object' && data !== null) {
    const k = (data as Record<string, unknown>)['object_key'];
    if (typeof k === 'string' && k.trim() !== '') return k.trim();
  }
  return sentKey;
}
