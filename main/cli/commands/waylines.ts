import type { Wayline, WaylineQuery } from '../../core/api/types.js';
import { DmsError } from '../../core/errors.js';
import {
  AIRCRAFT,
  CAMERAS,
  deviceKeyOf,
  deviceName,
  TEMPLATE_TYPES,
  type DeviceInfo,
} from '../../shared/domain.js';
import { openContext, type ServerFlags } from '../context.js';
import { printJson, writeLines } from '../output.js';

export interface WaylineFlags extends ServerFlags {
  favorited?: boolean;
  templateType?: number[];
  actionType?: number;
  droneModel?: string[];
  payloadModel?: string[];
  orderBy: string;
  page: number;
  pageSize: number;
  json?: boolean;
}

/** Keys for what the user typed: a key, or a DJI code, label or name (M30, "Matrice 30"); unknown is refused. */
function keysOf(
  given: string[] | undefined,
  table: Readonly<Record<string, DeviceInfo>>,
  option: string,
): string[] | undefined {
  if (!given?.length) return undefined;
  return given.map((text) => {
    const key = deviceKeyOf(text, table);
    if (key) return key;
    // A key this table does not know yet (a new model) is passed as it is.
    if (/^\d+-\d+-\d+$/.test(text.trim())) return text.trim();
    throw new DmsError(
      'invalid-input',
      `${option} ${text}: no such model. Use a key such as ${Object.values(table)[0]?.key} or one of: ${Object.keys(table).join(', ')}.`,
      { retryable: false },
    );
  });
}

const templateName = (t: number): string => TEMPLATE_TYPES.find((x) => x.value === t)?.name ?? `type ${t}`;

/** One table: a heading row, then one row per wayline, columns as wide as their longest cell. */
function table(list: Wayline[]): string[] {
  const rows = list.map((w) => {
    const start = w.start_wayline_point;
    return [
      w.favorited ? '*' : ' ',
      w.name ?? '(no name)',
      w.drone_model_key ? deviceName(w.drone_model_key) : '',
      (w.template_types ?? []).map(templateName).join(', '),
      typeof w.update_time === 'number'
        ? new Date(w.update_time).toISOString().slice(0, 16).replace('T', ' ')
        : '',
      start?.start_latitude !== undefined && start.start_lontitude !== undefined
        ? `${start.start_latitude.toFixed(5)}, ${start.start_lontitude.toFixed(5)}`
        : '',
    ];
  });
  const head = [' ', 'Name', 'Aircraft', 'Type', 'Updated (UTC)', 'Start (lat, lng)'];
  const widths = head.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => Math.min(40, (r[i] ?? '').length))),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)];
}

export async function waylinesCommand(flags: WaylineFlags): Promise<number> {
  const drones = keysOf(flags.droneModel, AIRCRAFT, '--drone-model');
  const payloads = keysOf(flags.payloadModel, CAMERAS, '--payload-model');
  const ctx = await openContext(flags);
  try {
    const query: WaylineQuery = { order_by: flags.orderBy, page: flags.page, page_size: flags.pageSize };
    if (flags.favorited !== undefined) query.favorited = flags.favorited;
    if (flags.templateType?.length) query.template_type = flags.templateType;
    if (flags.actionType !== undefined) query.action_type = flags.actionType;
    if (drones) query.drone_model_keys = drones;
    if (payloads) query.payload_model_key = payloads;
    const page = await ctx.api.listWaylines(query);
    if (flags.json) {
      printJson(page);
      return 0;
    }
    const { page: p, page_size, total } = page.pagination;
    const first = (p - 1) * page_size + 1;
    const lines = [
      total === 0
        ? `No waylines match on ${ctx.serverLabel}.`
        : page.list.length === 0
          ? `No waylines on page ${p} on ${ctx.serverLabel}: there are ${total} (--page 1).`
          : `Waylines ${first}-${first + page.list.length - 1} of ${total} on ${ctx.serverLabel}${page.list.some((w) => w.favorited) ? ' (* = favorite)' : ''}:`,
    ];
    if (page.list.length > 0) lines.push(...table(page.list));
    if (total > first - 1 + page.list.length && page.list.length > 0) lines.push(`More: --page ${p + 1}`);
    writeLines(lines);
    return 0;
  } finally {
    await ctx.close();
  }
}
