import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Wayline } from '../core/api/types.js';
import type { SqlDb } from './data/sql.js';
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

/** `EXISTS` an element of the JSON array in `column` among `n` values (SQLite json_each, PostgreSQL json_array_elements_text). */
function anyJsonElement(db: SqlDb, column: string, n: number): string {
  const elements =
    db.kind === 'postgres'
      ? `json_array_elements_text(${column}::json) AS j(value)`
      : `json_each(${column}) j`;
  return `EXISTS (SELECT 1 FROM ${elements} WHERE j.value IN (${marks(n)}))`;
}

/** Filtering, counting and paging run in the database, so a big library never loads into memory. */
export async function listWaylines(
  db: SqlDb,
  workspaceId: string,
  f: WaylineFilter,
): Promise<{ list: Wayline[]; total: number }> {
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
  // PostgreSQL compares the elements as text: the values go as text too.
  const asText = (v: number) => (db.kind === 'postgres' ? String(v) : v);
  if (f.templateTypes?.length) {
    where.push(anyJsonElement(db, 'template_types', f.templateTypes.length));
    args.push(...f.templateTypes.map(asText));
  }
  if (f.payloadModelKeys?.length) {
    where.push(anyJsonElement(db, 'payload_model_keys', f.payloadModelKeys.length));
    args.push(...f.payloadModelKeys);
  }
  const clause = where.join(' AND ');
  const counted = await db.get<{ n: number }>(`SELECT count(*) AS n FROM waylines WHERE ${clause}`, args);
  // The column comes from ORDER_COLUMNS, never from the request text; id breaks ties so pages are stable.
  // NULLs sort first ascending, as SQLite does by itself.
  const nulls = db.kind === 'postgres' ? (f.orderDir === 'asc' ? ' NULLS FIRST' : ' NULLS LAST') : '';
  const order = `${ORDER_COLUMNS[f.orderColumn]} ${f.orderDir === 'asc' ? 'ASC' : 'DESC'}${nulls}, id ASC`;
  const rows = await db.all<WaylineRow>(
    `SELECT ${WAYLINE_COLUMNS} FROM waylines WHERE ${clause} ORDER BY ${order} LIMIT ? OFFSET ?`,
    [...args, f.pageSize, (f.page - 1) * f.pageSize],
  );
  return { list: rows.map(toItem), total: counted?.n ?? 0 };
}

const WAYLINE_COLUMNS =
  'id, name, drone_model_key, payload_model_keys, template_types, favorited, action_type, user_name, ' +
  'start_latitude, start_lontitude, create_time, update_time';

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

/** Validates every item (the first invalid one throws `Wayline <index>: ...`). */
export function parseWaylines(items: unknown[]): WaylineImport[] {
  return items.map((item, i) => {
    try {
      return parseOrThrow(waylineImportSchema, item, 'wayline');
    } catch (err) {
      throw new Error(`Wayline ${i}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** Validates every item first, then writes all of them in one transaction (all or nothing). Upserts by id. */
export async function insertWaylines(
  db: SqlDb,
  defaultWorkspaceId: string,
  items: unknown[],
): Promise<number> {
  const parsed = parseWaylines(items);
  await db.tx((t) => writeWaylines(t, defaultWorkspaceId, parsed));
  return parsed.length;
}

/** Writes validated waylines with `t`, inside the caller's transaction. */
export async function writeWaylines(
  t: SqlDb,
  defaultWorkspaceId: string,
  parsed: WaylineImport[],
): Promise<void> {
  const now = Date.now();
  for (const [i, w] of parsed.entries()) {
    const ws = w.workspace_id ?? defaultWorkspaceId;
    if (!(await t.get('SELECT id FROM workspaces WHERE id = ?', [ws])))
      throw new Error(`Wayline ${i}: workspace ${ws} does not exist.`);
    const created = w.create_time ?? w.update_time ?? now;
    await t.run(
      `INSERT INTO waylines (id, workspace_id, name, drone_model_key, payload_model_keys, template_types,
                               favorited, action_type, user_name, start_latitude, start_lontitude, create_time, update_time)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET
           workspace_id = excluded.workspace_id, name = excluded.name, drone_model_key = excluded.drone_model_key,
           payload_model_keys = excluded.payload_model_keys, template_types = excluded.template_types,
           favorited = excluded.favorited, action_type = excluded.action_type, user_name = excluded.user_name,
           start_latitude = excluded.start_latitude, start_lontitude = excluded.start_lontitude,
           update_time = excluded.update_time`,
      [
        w.id ?? randomUUID(),
        ws,
        w.name,
        w.drone_model_key ?? null,
        JSON.stringify(w.payload_model_keys),
        JSON.stringify(w.template_types),
        w.favorited ? 1 : 0,
        w.action_type,
        w.user_name ?? null,
        w.start_wayline_point?.start_latitude ?? null,
        w.start_wayline_point?.start_lontitude ?? null,
        created,
        w.update_time ?? created,
      ],
    );
  }
}
