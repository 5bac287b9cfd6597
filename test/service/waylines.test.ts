import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES, importWaylines } from '../../main/service/index.js';
import { call, paths, startTemp, type Loose } from './helpers.js';

let s: Awaited<ReturnType<typeof startTemp>>;
let all: Loose[];
const list = async (query = '') => {
  const r = await call(s, 'GET', `${paths(s.workspaceId).waylines}${query ? `?${query}` : ''}`);
  return r;
};

beforeAll(async () => {
  s = await startTemp();
  all = (await list('page_size=100')).body.data.list;
});
afterAll(async () => {
  await s.stop();
});

const CONTRACT_FIELDS = [
  'id',
  'name',
  'drone_model_key',
  'payload_model_keys',
  'template_types',
  'favorited',
  'action_type',
  'update_time',
  'user_name',
  'start_wayline_point',
  'create_time',
];

describe('demo waylines', () => {
  it('seeds at least 25 varied waylines with the contract fields', () => {
    expect(all.length).toBeGreaterThanOrEqual(25);
    for (const w of all) {
      expect(Object.keys(w).sort()).toEqual([...CONTRACT_FIELDS].sort());
      expect(Object.keys(w.start_wayline_point).sort()).toEqual(['start_latitude', 'start_lontitude']);
    }
    const distinct = (f: (w: Loose) => unknown) => new Set(all.map(f)).size;
    expect(distinct((w) => w.drone_model_key)).toBeGreaterThanOrEqual(5);
    expect(new Set(all.flatMap((w) => w.template_types))).toEqual(new Set([0, 1, 2, 3]));
    expect(distinct((w) => w.favorited)).toBe(2);
    expect(distinct((w) => w.action_type)).toBe(2);
    expect(all.map((w) => w.name)).toEqual(
      expect.arrayContaining(['Waypoint1', 'Bridge inspection A', 'Solar farm north']),
    );
  });
});

describe('paging', () => {
  it('defaults to page 1 of 10, newest update first', async () => {
    const r = await list();
    expect(r.body.data.pagination).toEqual({ page: 1, page_size: 10, total: all.length });
    const times = r.body.data.list.map((w: Loose) => w.update_time);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(times[0]).toBe(Math.max(...all.map((w) => w.update_time)));
  });

  it('walks all pages without gaps or repeats, and a page past the end is empty', async () => {
    const seen: string[] = [];
    for (let page = 1; ; page++) {
      const r = await list(`page=${page}&page_size=7&order_by=name asc`);
      expect(r.body.data.pagination.total).toBe(all.length);
      if (r.body.data.list.length === 0) break;
      seen.push(...r.body.data.list.map((w: Loose) => w.id));
    }
    expect(seen).toHaveLength(all.length);
    expect(new Set(seen).size).toBe(all.length);
    const past = await list('page=99');
    expect(past.body.data).toEqual({ list: [], pagination: { page: 99, page_size: 10, total: all.length } });
  });

  it('refuses page_size over 100 and page 0 with a clear message', async () => {
    let r = await list('page_size=101');
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: CODES.INVALID_REQUEST,
      message: 'page_size must be an integer from 1 to 100 (got "101").',
    });
    r = await list('page=0');
    expect(r.body.message).toMatch(/^page must be an integer/);
    r = await list('page=abc');
    expect(r.status).toBe(400);
  });
});

describe('order_by', () => {
  const columns = [
    'name',
    'update_time',
    'create_time',
    'favorited',
    'user_name',
    'drone_model_key',
    'action_type',
  ];
  const cmp = (a: unknown, b: unknown) => (a === b ? 0 : (a as Loose) < (b as Loose) ? -1 : 1);

  it.each(columns)('sorts by %s both ways', async (column) => {
    for (const dir of ['asc', 'desc']) {
      const r = await list(`page_size=100&order_by=${encodeURIComponent(`${column} ${dir}`)}`);
      const values = r.body.data.list.map((w: Loose) => w[column]);
      const sorted = [...values].sort((a, b) => (dir === 'asc' ? cmp(a, b) : cmp(b, a)));
      expect(values).toEqual(sorted);
    }
  });

  it('accepts "+" for the space and an upper-case direction', async () => {
    const r = await list('order_by=name+DESC&page_size=100');
    expect(r.body.data.list[0].name).toBe(
      [...all]
        .map((w) => w.name)
        .sort()
        .reverse()[0],
    );
  });

  it('refuses an unknown column or a bad direction', async () => {
    let r = await list(`order_by=${encodeURIComponent('password desc')}`);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe(CODES.INVALID_REQUEST);
    expect(r.body.message).toContain('update_time');
    r = await list(`order_by=${encodeURIComponent('name sideways')}`);
    expect(r.body.message).toBe('The order_by direction must be asc or desc (got "sideways").');
    r = await list(`order_by=${encodeURIComponent('name; DROP TABLE waylines')}`);
    expect(r.status).toBe(400);
  });
});

describe('filters', () => {
  const check = async (query: string, predicate: (w: Loose) => boolean) => {
    const r = await list(`page_size=100&${query}`);
    expect(r.body.code).toBe(0);
    const expected = all.filter(predicate);
    expect(expected.length).toBeGreaterThan(0); // a filter that matches nothing proves nothing
    expect(r.body.data.pagination.total).toBe(expected.length);
    expect(r.body.data.list.map((w: Loose) => w.id).sort()).toEqual(expected.map((w) => w.id).sort());
  };

  it('favorited', async () => {
    await check('favorited=true', (w) => w.favorited);
    await check('favorited=false', (w) => !w.favorited);
    expect((await list('favorited=maybe')).status).toBe(400);
  });

  it('template_type is Loose-of, repeated or comma-separated', async () => {
    await check('template_type=3', (w) => w.template_types.includes(3));
    await check('template_type=1&template_type=2', (w) =>
      w.template_types.some((t: number) => t === 1 || t === 2),
    );
    await check('template_type=1,2', (w) => w.template_types.some((t: number) => t === 1 || t === 2));
    expect((await list('template_type=x')).body.code).toBe(CODES.INVALID_REQUEST);
  });

  it('action_type', async () => {
    await check('action_type=1', (w) => w.action_type === 1);
    await check('action_type=0', (w) => w.action_type === 0);
  });

  it('drone_model_keys and payload_model_key are Loose-of', async () => {
    await check('drone_model_keys=0-89-0&drone_model_keys=0-99-1', (w) =>
      ['0-89-0', '0-99-1'].includes(w.drone_model_key),
    );
    await check('payload_model_key=1-43-0&payload_model_key=1-53-0', (w) =>
      w.payload_model_keys.some((p: string) => p === '1-43-0' || p === '1-53-0'),
    );
  });

  it('combines filters with AND', async () => {
    await check(
      'favorited=true&template_type=0&drone_model_keys=0-60-0,0-67-1,0-89-0',
      (w) =>
        w.favorited &&
        w.template_types.includes(0) &&
        ['0-60-0', '0-67-1', '0-89-0'].includes(w.drone_model_key),
    );
  });
});

describe('importWaylines', () => {
  it('imports validated items into a workspace (also while the service runs)', async () => {
    const ws = await s.admin.createWorkspace('Import target');
    const n = await importWaylines(
      s.dataDir,
      [
        {
          workspace_id: ws,
          name: 'Imported 1',
          drone_model_key: '0-77-1',
          template_types: [0],
          update_time: 1000,
        },
        { workspace_id: ws, id: 'fixed-id', name: 'Imported 2', favorited: true, update_time: 2000 },
      ],
      s.dbConfig,
    );
    expect(n).toBe(2);
    const token = await s.admin.createToken({ workspaceId: ws });
    const r = await call(s, 'GET', paths(ws).waylines, { token });
    expect(r.body.data.list.map((w: Loose) => w.name)).toEqual(['Imported 2', 'Imported 1']);
    // Same id again: replaced, not duplicated.
    await importWaylines(
      s.dataDir,
      [{ workspace_id: ws, id: 'fixed-id', name: 'Renamed', update_time: 3000 }],
      s.dbConfig,
    );
    const again = await call(s, 'GET', paths(ws).waylines, { token });
    expect(again.body.data.pagination.total).toBe(2);
    expect(again.body.data.list[0].name).toBe('Renamed');
  });

  it('rejects the whole batch on the first invalid item, naming it', async () => {
    await expect(
      importWaylines(s.dataDir, [{ name: 'ok' }, { drone_model_key: 'M30' }], s.dbConfig),
    ).rejects.toThrow('Wayline 1: name is required (string).');
    await expect(
      importWaylines(s.dataDir, [{ name: 'x', workspace_id: 'missing' }], s.dbConfig),
    ).rejects.toThrow(/workspace missing does not exist/);
  });
});
