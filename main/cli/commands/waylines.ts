import type { WaylineQuery } from '../../core/api/types.js';
import { openContext, type ServerFlags } from '../context.js';
import { printJson } from '../output.js';

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

export async function waylinesCommand(flags: WaylineFlags): Promise<number> {
  const ctx = await openContext(flags);
  try {
    const query: WaylineQuery = { order_by: flags.orderBy, page: flags.page, page_size: flags.pageSize };
    if (flags.favorited !== undefined) query.favorited = flags.favorited;
    if (flags.templateType?.length) query.template_type = flags.templateType;
    if (flags.actionType !== undefined) query.action_type = flags.actionType;
    if (flags.droneModel?.length) query.drone_model_keys = flags.droneModel;
    if (flags.payloadModel?.length) query.payload_model_key = flags.payloadModel;
    const page = await ctx.api.listWaylines(query);
    if (flags.json) {
      printJson(page);
      return 0;
    }
    const { page: p, page_size, total } = page.pagination;
    process.stdout.write(
      `Waylines ${total === 0 ? 0 : (p - 1) * page_size + 1}-${(p - 1) * page_size + page.list.length} of ${total} (${ctx.serverLabel})\n`,
    );
    for (const w of page.list) {
      const when =
        typeof w.update_time === 'number'
          ? new Date(w.update_time).toISOString().slice(0, 16).replace('T', ' ')
          : '';
      const start = w.start_wayline_point;
      const pos =
        start?.start_latitude !== undefined
          ? ` @ ${start.start_latitude.toFixed(5)},${start.start_lontitude?.toFixed(5)}`
          : '';
      process.stdout.write(
        `${w.favorited ? '*' : ' '} ${(w.name ?? '(no name)').padEnd(32)} ${String(w.drone_model_key ?? '').padEnd(8)} types ${(w.template_types ?? []).join(',')}  ${when}${pos}\n`,
      );
    }
    return 0;
  } finally {
    await ctx.close();
  }
}
