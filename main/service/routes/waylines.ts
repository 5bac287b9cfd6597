import type { FastifyInstance } from 'fastify';
import { workspaceGuard } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { invalid, ok } from '../envelope.js';
import { listWaylines, ORDER_COLUMNS, type OrderColumn, type WaylineFilter } from '../waylines.js';

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;
/** The contract leaves the default order open; the sample server requires order_by, we are lenient. */
export const DEFAULT_ORDER = 'update_time desc';

type Query = Record<string, string | string[] | undefined>;

/**
 * Values of an array parameter, from any of the spellings clients use:
 * repeated (`a=1&a=2`), comma-separated (`a=1,2`) and bracketed (`a[]=1`).
 */
function listParam(q: Query, name: string): string[] | undefined {
  const raw = [q[name], q[`${name}[]`]].flat().filter((v): v is string => v !== undefined);
  if (raw.length === 0) return undefined;
  const values = raw
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  return values.length ? values : undefined;
}

function oneParam(q: Query, name: string): string | undefined {
  const v = q[name];
  const s = Array.isArray(v) ? v[v.length - 1] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

function intParam(q: Query, name: string, min: number, max: number): number | undefined {
  const s = oneParam(q, name);
  if (s === undefined) return undefined;
  if (!/^-?\d+$/.test(s) || +s < min || +s > max) {
    throw invalid(`${name} must be an integer from ${min} to ${max} (got "${s}").`);
  }
  return +s;
}

export function parseWaylineQuery(q: Query): WaylineFilter {
  const favoritedText = oneParam(q, 'favorited')?.toLowerCase();
  let favorited: boolean | undefined;
  if (favoritedText !== undefined) {
    if (!['true', 'false', '1', '0'].includes(favoritedText)) {
      throw invalid(`favorited must be true or false (got "${favoritedText}").`);
    }
    favorited = favoritedText === 'true' || favoritedText === '1';
  }
  const templateTypes = listParam(q, 'template_type')?.map((v) => {
    if (!/^\d+$/.test(v)) throw invalid(`template_type values must be integers (got "${v}").`);
    return +v;
  });
  const orderText = oneParam(q, 'order_by') ?? DEFAULT_ORDER;
  const m = /^(\w+)(?:\s+(\w+))?$/.exec(orderText);
  const column = m?.[1] ?? '';
  const direction = (m?.[2] ?? 'asc').toLowerCase();
  if (!m || !Object.hasOwn(ORDER_COLUMNS, column)) {
    throw invalid(
      `order_by must be "<column> asc" or "<column> desc" with a column among ${Object.keys(ORDER_COLUMNS).join(', ')} (got "${orderText}").`,
    );
  }
  if (direction !== 'asc' && direction !== 'desc') {
    throw invalid(`The order_by direction must be asc or desc (got "${m[2] ?? ''}").`);
  }
  const filter: WaylineFilter = {
    orderColumn: column as OrderColumn,
    orderDir: direction,
    page: intParam(q, 'page', 1, 1_000_000) ?? 1,
    pageSize: intParam(q, 'page_size', 1, MAX_PAGE_SIZE) ?? DEFAULT_PAGE_SIZE,
  };
  const actionType = intParam(q, 'action_type', 0, 1000);
  const droneModelKeys = listParam(q, 'drone_model_keys');
  const payloadModelKeys = listParam(q, 'payload_model_key');
  if (favorited !== undefined) filter.favorited = favorited;
  if (templateTypes) filter.templateTypes = templateTypes;
  if (actionType !== undefined) filter.actionType = actionType;
  if (droneModelKeys) filter.droneModelKeys = droneModelKeys;
  if (payloadModelKeys) filter.payloadModelKeys = payloadModelKeys;
  return filter;
}

export function registerWaylineRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Params: { workspace_id: string }; Querystring: Query }>(
    '/wayline/api/v1/workspaces/:workspace_id/waylines',
    { preHandler: workspaceGuard(ctx.tokens) },
    async (req) => {
      const filter = parseWaylineQuery(req.query);
      const { list, total } = await listWaylines(ctx.db, req.params.workspace_id, filter);
      return ok({ list, pagination: { page: filter.page, page_size: filter.pageSize, total } });
    },
  );
}
