import type { Statement } from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Wayline } from '../core/api/types.js';
import type { Db } from './db.js';
import { parseOrThrow, zInt } from './envelope.js';

/** Columns `order_by` may name; values are the SQL used for them. */
export const ORDER_COLUMNS = {
  name: 'name',
  update_time: 'update_time',
  create_time: 'create_time',
  favorited: 'favorited',
  user_name: 'user_name',
  drone_model_key: 'drone_model_key',
  action_type: 'action_type',
} as const;
export type OrderColumn = keyof typeof ORDER_COLUMNS;

export interface WaylineFilter {
  favorited?: boolean;
  templateTypes?: number[];
  actionType?: number;
  droneModelKeys?: string[];
  payloadModelKeys?: string[];
  orderColumn: OrderColumn;
  orderDir: 'asc' | 'desc';
  page: number;
  pageSize: number;
}

interface WaylineRow {
  id: string;
  name: string;
  drone_model_key: string | null;
  payload_model_keys: string;
  template_types: string;
  favorited: number;
  action_type: number;
  user_name: string | null;
  start_latitude: number | null;
  start_lontitude: number | null;
  create_time: number;
  update_time: number;
}

function toItem(row: WaylineRow): Wayline {
  const item: Wayline = {
    id: row.id,
    name: row.name,
    payload_model_keys: JSON.parse(row.payload_model_keys) as string[],
    template_types: JSON.parse(row.template_types) as number[],
    favorited: row.favorited !== 0,
    action_type: row.action_type,
    update_time: row.update_time,
    create_time: row.create_time,
  };
  // Nulls are left out, as the sample server does.
  if (row.drone_model_key !== null) item.drone_model_key = row.drone_model_key;
  if (row.user_name !== null) item.user_name = row.user_name;
  if (row.start_latitude !== null && row.start_lontitude !== null) {
    item.start_wayline_point = { start_latitude: row.start_latitude, start_lontitude: row.start_lontitude };
  }
  return item;
}

/** Filtering, counting and paging run in SQLite, so a big library never loads into memory. */
export function listWaylines(
  db: Db,
  workspaceId: string,
  f: WaylineFilter,
): { list: Wayline[]; total: number } {
  const where = ['workspace_id = ?'];
  const args: (string | number)[] = [workspaceId];
  if (f.favorited !== undefined) {
    where.push('favorited = ?');
    args.push(f.favorited ? 1 : 0);
  }
  if (f.actionType !== undefined) {
    where.push('action_type = ?');
    args.push(f.actionType);
  }
  if (f.droneModelKeys?.length) {
    where.push(`drone_model_key IN (${marks(f.droneModelKeys.length)})`);
    args.push(...f.droneModelKeys);
  }
  // Array filters are any-of: an item matches when it shares one value with the filter.
  if (f.templateTypes?.length) {
    where.push(
      `EXISTS (SELECT 1 FROM json_each(template_types) j WHERE j.value IN (${marks(f.templateTypes.length)}))`,
    );
    args.push(...f.templateTypes);
  }
  if (f.payloadModelKeys?.length) {
    where.push(
      `EXISTS (SELECT 1 FROM json_each(payload_model_keys) j WHERE j.value IN (${marks(f.payloadModelKeys.length)}))`,
    );
    args.push(...f.payloadModelKeys);
  }
  const clause = where.join(' AND ');
  const total = (
    prepared(db, `SELECT count(*) AS n FROM waylines WHERE ${clause}`).get(...args) as { n: number }
  ).n;
  // The column comes from ORDER_COLUMNS, never from the request text; id breaks ties so pages are stable.
  const order = `${ORDER_COLUMNS[f.orderColumn]} ${f.orderDir === 'asc' ? 'ASC' : 'DESC'}, id ASC`;
  const rows = prepared(db, `SELECT * FROM waylines WHERE ${clause} ORDER BY ${order} LIMIT ? OFFSET ?`).all(
    ...args,
    f.pageSize,
    (f.page - 1) * f.pageSize,
  ) as WaylineRow[];
  return { list: rows.map(toItem), total };
}

// Statements by SQL text, per database. The texts come from a bounded set (the
// filters present, the number of values each, the order column): capped anyway.
type Stmt = Statement<unknown[]>;
const statementCache = new WeakMap<Db, Map<string, Stmt>>();
function prepared(db: Db, sql: string): Stmt {
  let cache = statementCache.get(db);
  if (!cache) {
    cache = new Map();
    statementCache.set(db, cache);
  }
  let stmt = cache.get(sql);
  if (!stmt) {
    if (cache.size >= 256) cache.clear();
    stmt = db.prepare<unknown[]>(sql);
    cache.set(sql, stmt);
  }
  return stmt;
}

function marks(n: number): string {
  return new Array<string>(n).fill('?').join(', ');
}

const modelKey = z
  .string()
  .regex(/^\d+-\d+-\d+$/, 'expected "domain-type-subtype", e.g. 0-67-0')
  .max(32);

/** One wayline as importWaylines() accepts it: the contract's item (2.2) plus create_time and workspace_id. */
export const waylineImportSchema = z.object({
  id: z.string().min(1).max(64).optional(),
  workspace_id: z.string().min(1).max(64).optional(),
  name: z.string().min(1).max(255),
  drone_model_key: modelKey.nullish(),
  payload_model_keys: z.array(modelKey).max(16).default([]),
  template_types: z.array(zInt().min(0).max(1000)).max(16).default([]),
  favorited: z.boolean().default(false),
  action_type: zInt().min(0).max(1000).default(0),
  update_time: zInt().min(0).optional(),
  create_time: zInt().min(0).optional(),
  user_name: z.string().max(64).nullish(),
  start_wayline_point: z
    .object({
      start_latitude: z.number().min(-90).max(90),
      start_lontitude: z.number().min(-180).max(180),
    })
    .nullish(),
});
export type WaylineImport = z.output<typeof waylineImportSchema>;

/** Validates every item first, then writes all of them in one transaction (all or nothing). Upserts by id. */
export function insertWaylines(db: Db, defaultWorkspaceId: string, items: unknown[]): number {
  const parsed = items.map((item, i) => {
    try {
      return parseOrThrow(waylineImportSchema, item, 'wayline');
    } catch (err) {
      throw new Error(`Wayline ${i}: ${(err as Error).message}`, { cause: err });
    }
  });
  const workspaceExists = db.prepare<[string], { id: string }>('SELECT id FROM workspaces WHERE id = ?');
  const upsert = db.prepare(`
    INSERT INTO waylines (id, workspace_id, name, drone_model_key, payload_model_keys, template_types,
                          favorited, action_type, user_name, start_latitude, start_lontitude, create_time, update_time)
    VALUES (@id, @workspace_id, @name, @drone_model_key, @payload_model_keys, @template_types,
            @favorited, @action_type, @user_name, @start_latitude, @start_lontitude, @create_time, @update_time)
    ON CONFLICT (id) DO UPDATE SET
      workspace_id = excluded.workspace_id, name = excluded.name, drone_model_key = excluded.drone_model_key,
      payload_model_keys = excluded.payload_model_keys, template_types = excluded.template_types,
      favorited = excluded.favorited, action_type = excluded.action_type, user_name = excluded.user_name,
      start_latitude = excluded.start_latitude, start_lontitude = excluded.start_lontitude,
      update_time = excluded.update_time`);
  const now = Date.now();
  db.transaction(() => {
    parsed.forEach((w, i) => {
      const ws = w.workspace_id ?? defaultWorkspaceId;
      if (!workspaceExists.get(ws)) throw new Error(`Wayline ${i}: workspace ${ws} does not exist.`);
      const created = w.create_time ?? w.update_time ?? now;
      upsert.run({
        id: w.id ?? randomUUID(),
        workspace_id: ws,
        name: w.name,
        drone_model_key: w.drone_model_key ?? null,
        payload_model_keys: JSON.stringify(w.payload_model_keys),
        template_types: JSON.stringify(w.template_types),
        favorited: w.favorited ? 1 : 0,
        action_type: w.action_type,
        user_name: w.user_name ?? null,
        start_latitude: w.start_wayline_point?.start_latitude ?? null,
        start_lontitude: w.start_wayline_point?.start_lontitude ?? null,
        create_time: created,
        update_time: w.update_time ?? created,
      });
    });
  })();
  return parsed.length;
}
