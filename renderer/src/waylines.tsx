import { visible } from '../../main/shared/visible.js';
import type { WaylinePageView, WaylineQueryView, WaylineView } from '../../main/shared/ipc.js';
import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from './bridge.js';
import { formatCoord, formatWhen, plural } from './format.js';
import {
  AI_SPOT_CHECK_ACTION,
  DRONE_MODELS,
  PAYLOAD_MODELS,
  TEMPLATE_TYPES,
  droneName,
  payloadName,
  templateName,
  type Named,
} from './models.js';

type SortColumn = 'name' | 'update_time' | 'favorited' | 'user_name' | 'drone_model_key';
type SortDir = 'asc' | 'desc';
type Favorited = 'any' | 'yes' | 'no';

interface Filters {
  favorited: Favorited;
  templateTypes: number[];
  droneModelKeys: string[];
  payloadModelKeys: string[];
  aiOnly: boolean;
}

const NO_FILTERS: Filters = {
  favorited: 'any',
  templateTypes: [],
  droneModelKeys: [],
  payloadModelKeys: [],
  aiOnly: false,
};
const PAGE_SIZES = [10, 20, 50] as const;
const FIRST_DIR: Record<SortColumn, SortDir> = {
  name: 'asc',
  update_time: 'desc',
  favorited: 'desc',
  user_name: 'asc',
  drone_model_key: 'asc',
};

/** The query as the contract wants it: only the filters that are set. */
export function buildQuery(
  f: Filters,
  sort: { col: SortColumn; dir: SortDir },
  page: number,
  pageSize: number,
) {
  const q: WaylineQueryView = { orderBy: `${sort.col} ${sort.dir}`, page, pageSize };
  if (f.favorited !== 'any') q.favorited = f.favorited === 'yes';
  if (f.templateTypes.length > 0) q.templateTypes = [...f.templateTypes].sort((a, b) => a - b);
  if (f.droneModelKeys.length > 0) q.droneModelKeys = [...f.droneModelKeys];
  if (f.payloadModelKeys.length > 0) q.payloadModelKeys = [...f.payloadModelKeys];
  if (f.aiOnly) q.actionType = AI_SPOT_CHECK_ACTION;
  return q;
}

function toggle<T>(list: T[], value: T, on: boolean): T[] {
  const without = list.filter((v) => v !== value);
  return on ? [...without, value] : without;
}

export function Waylines() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [sort, setSort] = useState<{ col: SortColumn; dir: SortDir }>({ col: 'update_time', dir: 'desc' });
  const [page, setPage] = useState(1);
  const [pageSize, setPageSize] = useState<number>(20);
  const [data, setData] = useState<WaylinePageView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [attempt, setAttempt] = useState(0);
  const seq = useRef(0);

  useEffect(() => {
    const mine = ++seq.current;
    setLoading(true);
    void call('waylines:list', buildQuery(filters, sort, page, pageSize)).then((r) => {
      if (mine !== seq.current) return;
      setLoading(false);
      if (r.ok) {
        setData(r.value);
        setError(null);
      } else {
        setError(r.error.message);
      }
    });
  }, [filters, sort, page, pageSize, attempt]);

  const changeFilters = (f: Filters): void => {
    setFilters(f);
    setPage(1);
  };

  const sortBy = (col: SortColumn): void => {
    setSort((s) =>
      s.col === col ? { col, dir: s.dir === 'asc' ? 'desc' : 'asc' } : { col, dir: FIRST_DIR[col] },
    );
    setPage(1);
  };

  const pages = data ? Math.max(1, Math.ceil(data.total / data.pageSize)) : 1;
  const activeFilters =
    (filters.favorited !== 'any' ? 1 : 0) +
    filters.templateTypes.length +
    filters.droneModelKeys.length +
    filters.payloadModelKeys.length +
    (filters.aiOnly ? 1 : 0);

  return (
    <div class="screen waylines-screen">
      <h1 class="visually-hidden">Waylines</h1>
      <aside class="filters panel" aria-labelledby="filters-h">
        <div class="panel-head">
          <h2 id="filters-h">Filters</h2>
          <button
            type="button"
            class="btn btn-small"
            disabled={activeFilters === 0}
            onClick={() => changeFilters(NO_FILTERS)}
          >
            Clear
          </button>
        </div>

        <fieldset>
          <legend>Favorites</legend>
          {(
            [
              ['any', 'All waylines'],
              ['yes', 'Favorites only'],
              ['no', 'Not favorites'],
            ] as const
          ).map(([value, label]) => (
            <label key={value} class="check">
              <input
                type="radio"
                name="favorited"
                value={value}
                checked={filters.favorited === value}
                onChange={() => changeFilters({ ...filters, favorited: value })}
              />
              {label}
            </label>
          ))}
        </fieldset>

        <fieldset>
          <legend>Type</legend>
          {TEMPLATE_TYPES.map((t) => (
            <label key={t.value} class="check">
              <input
                type="checkbox"
                checked={filters.templateTypes.includes(t.value)}
                onChange={(e) =>
                  changeFilters({
                    ...filters,
                    templateTypes: toggle(filters.templateTypes, t.value, e.currentTarget.checked),
                  })
                }
              />
              {t.name}
            </label>
          ))}
          <label class="check">
            <input
              type="checkbox"
              checked={filters.aiOnly}
              onChange={(e) => changeFilters({ ...filters, aiOnly: e.currentTarget.checked })}
            />
            AI spot-check only
          </label>
        </fieldset>

        <ModelChecklist
          legend="Aircraft"
          models={DRONE_MODELS}
          selected={filters.droneModelKeys}
          onChange={(droneModelKeys) => changeFilters({ ...filters, droneModelKeys })}
        />
        <ModelChecklist
          legend="Payload"
          models={PAYLOAD_MODELS}
          selected={filters.payloadModelKeys}
          onChange={(payloadModelKeys) => changeFilters({ ...filters, payloadModelKeys })}
        />
      </aside>

      <section class="panel wayline-list" aria-labelledby="wl-h" aria-busy={loading}>
        <div class="panel-head">
          <h2 id="wl-h">
            Waylines{' '}
            {data && !error ? (
              <span class="count" data-testid="wl-total">
                {plural(data.total, 'wayline')}
              </span>
            ) : null}
          </h2>
          {loading ? (
            <span class="muted" role="status">
              Loading…
            </span>
          ) : null}
        </div>

        {error ? (
          <div class="note tone-error" role="alert" data-testid="wl-error">
            <span>Could not load the waylines: {visible(error)}</span>
            <button type="button" class="btn" onClick={() => setAttempt((a) => a + 1)}>
              Retry
            </button>
          </div>
        ) : null}

        {data && !error ? (
          data.list.length === 0 ? (
            <div class="empty" data-testid="wl-empty">
              <p>No waylines match these filters.</p>
              {activeFilters > 0 ? (
                <button type="button" class="btn" onClick={() => changeFilters(NO_FILTERS)}>
                  Clear filters
                </button>
              ) : null}
            </div>
          ) : (
            <WaylineTable list={data.list} sort={sort} onSort={sortBy} />
          )
        ) : null}

        {data && !error && data.total > 0 ? (
          <nav class="pager" aria-label="Pages">
            <button
              type="button"
              class="btn"
              disabled={page <= 1 || loading}
              onClick={() => setPage(page - 1)}
            >
              ‹ Previous
            </button>
            <span data-testid="wl-page">
              Page {data.page} of {pages}
            </span>
            <button
              type="button"
              class="btn"
              disabled={page >= pages || loading}
              onClick={() => setPage(page + 1)}
            >
              Next ›
            </button>
            <label class="inline-field">
              <span>Per page</span>
              <select
                value={String(pageSize)}
                onChange={(e) => {
                  setPageSize(Number(e.currentTarget.value));
                  setPage(1);
                }}
              >
                {PAGE_SIZES.map((n) => (
                  <option key={n} value={String(n)}>
                    {n}
                  </option>
                ))}
              </select>
            </label>
          </nav>
        ) : null}
      </section>
    </div>
  );
}

function ModelChecklist(props: {
  legend: string;
  models: readonly Named[];
  selected: string[];
  onChange: (keys: string[]) => void;
}) {
  return (
    <details class="model-list" open={props.selected.length > 0 ? true : undefined}>
      <summary>
        {props.legend}
        {props.selected.length > 0 ? <span class="count"> ({props.selected.length} chosen)</span> : null}
      </summary>
      <fieldset>
        <legend class="visually-hidden">{props.legend}</legend>
        {props.models.map((m) => (
          <label key={m.key} class="check">
            <input
              type="checkbox"
              value={m.key}
              checked={props.selected.includes(m.key)}
              onChange={(e) => props.onChange(toggle(props.selected, m.key, e.currentTarget.checked))}
            />
            {m.name}
          </label>
        ))}
      </fieldset>
    </details>
  );
}

const COLUMNS: ReadonlyArray<{ label: string; col: SortColumn | null; cls?: string }> = [
  { label: 'Favorite', col: 'favorited', cls: 'fav-col' },
  { label: 'Name', col: 'name' },
  { label: 'Type', col: null },
  { label: 'Aircraft', col: 'drone_model_key' },
  { label: 'Payload', col: null },
  { label: 'Start point', col: null },
  { label: 'Updated', col: 'update_time' },
  { label: 'By', col: 'user_name' },
];

function WaylineTable(props: {
  list: WaylineView[];
  sort: { col: SortColumn; dir: SortDir };
  onSort: (col: SortColumn) => void;
}) {
  const { sort } = props;
  return (
    <table class="table waylines" data-testid="wl-table">
      <thead>
        <tr>
          {COLUMNS.map((c) => {
            const active = c.col !== null && sort.col === c.col;
            const ariaSort = active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : undefined;
            return (
              <th key={c.label} scope="col" class={c.cls} aria-sort={ariaSort}>
                {c.col === null ? (
                  c.label
                ) : (
                  <button type="button" class="sort" onClick={() => c.col && props.onSort(c.col)}>
                    {c.col === 'favorited' ? <span aria-hidden="true">★</span> : c.label}
                    {c.col === 'favorited' ? <span class="visually-hidden">{c.label}</span> : null}
                    <span class="sort-mark" aria-hidden="true">
                      {active ? (sort.dir === 'asc' ? '▲' : '▼') : '↕'}
                    </span>
                  </button>
                )}
              </th>
            );
          })}
        </tr>
      </thead>
      <tbody>
        {props.list.map((w) => (
          <tr key={w.id} data-wayline={w.id}>
            <td class="fav-col">
              {w.favorited ? (
                <span class="star" role="img" aria-label="Favorite">
                  ★
                </span>
              ) : (
                <span class="visually-hidden">Not a favorite</span>
              )}
            </td>
            <td class="wl-name">{visible(w.name)}</td>
            <td>
              {w.templateTypes.length > 0 ? w.templateTypes.map(templateName).join(', ') : '–'}
              {w.actionType === AI_SPOT_CHECK_ACTION ? <span class="tag">AI spot-check</span> : null}
            </td>
            <td>{droneName(w.droneModelKey)}</td>
            <td>{w.payloadModelKeys.length > 0 ? w.payloadModelKeys.map(payloadName).join(', ') : '–'}</td>
            <td class="coord">
              {w.start ? (
                formatCoord(w.start)
                  .split(', ')
                  .map((part) => <span key={part}>{part}</span>)
              ) : (
                <span>–</span>
              )}
            </td>
            <td class="nowrap">{formatWhen(w.updateTime)}</td>
            <td>{w.userName ? visible(w.userName) : '–'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
