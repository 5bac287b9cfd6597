import { visible } from '../../main/shared/visible.js';
import { QUEUE_FILTERS, type QueueFilter } from '../../main/shared/domain.js';
import { resumable } from '../../main/shared/states.js';
import { lanesLine } from '../../main/shared/lanes.js';
import type {
  AppStateView,
  HistoryEntryView,
  QueueItemView,
  RunStateName,
  WaylineView,
} from '../../main/shared/ipc.js';
import { useEffect, useState } from 'preact/hooks';
import { call } from './bridge.js';
import { formatBytes, formatDuration, formatEta, formatRate, formatWhen, plural } from './format.js';
import { Cards } from './cards.js';
import { LinkPanel } from './link.js';
import { GetStarted, firstRunSteps } from './get-started.js';
import { NeedYou } from './need-you.js';
import { usePushed } from './use-pushed.js';
import { banners, fileStateWords, fileTone, progressSentence } from './words.js';

const FILTER_LABELS: Record<QueueFilter, string> = {
  all: 'All files',
  active: 'Still to upload',
  failed: 'Need you',
  done: 'Done',
};

const QUEUE_LIMIT = 500;
const HISTORY_LIMIT = 50;

interface Props {
  state: AppStateView | null;
  onState: (s: AppStateView) => void;
  onGoToSettings: () => void;
}

export function Overview({ state, onState, onGoToSettings }: Props) {
  const [busy, setBusy] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  const [filter, setFilter] = useState<QueueFilter>('all');
  const listQueue = () => call('queue:list', { filter, limit: QUEUE_LIMIT });
  const files = usePushed('push:queue-changed', 1000, listQueue, [filter]);
  const { value: queue, error: queueError, reload: loadQueue } = files;

  const act = async (name: string, run: () => Promise<string | null>): Promise<void> => {
    setBusy(name);
    setActionError(null);
    try {
      const err = await run();
      if (err !== null) setActionError(err);
    } finally {
      setBusy(null);
    }
  };

  const engineCall = (channel: 'sync:pause' | 'sync:resume' | 'sync:now', what: string) =>
    act(channel, async () => {
      const r = await call(channel, undefined);
      if (!r.ok) return `Could not ${what}: ${r.error.message}`;
      onState(r.value);
      return null;
    });

  const retry = (request: { id: number } | { all: true }, what: string) =>
    act('id' in request ? `retry-${request.id}` : 'retry-all', async () => {
      const r = await call('queue:retry', request);
      if (!r.ok) return `Could not retry ${what}: ${r.error.message}`;
      await loadQueue();
      return null;
    });

  // The first-run steps lead to Settings themselves: the sign-in banner then only says why.
  const firstRun = state ? firstRunSteps(state) !== null : false;

  return (
    <div class="screen">
      <h1 class="visually-hidden">Overview</h1>
      {state ? (
        banners(state).length > 0 ? (
          <div class="banners">
            {banners(state).map((b) => (
              <div key={b.title} class={`banner tone-${b.tone}`} role="status" data-testid="banner">
                <div class="banner-text">
                  <p class="banner-title">{visible(b.title)}</p>
                  {b.detail ? <p class="banner-detail">{visible(b.detail)}</p> : null}
                </div>
                {b.action === 'settings' && !firstRun ? (
                  <button type="button" class="btn btn-primary" onClick={onGoToSettings}>
                    Open Settings to sign in
                  </button>
                ) : null}
              </div>
            ))}
          </div>
        ) : null
      ) : (
        <p class="muted" role="status">
          Loading…
        </p>
      )}

      {state ? <GetStarted state={state} onGoToSettings={onGoToSettings} /> : null}
      {state && state.failedCount > 0 ? (
        <NeedYou failedCount={state.failedCount} busy={busy} onRetry={retry} />
      ) : null}
      {state ? <Cards state={state} /> : null}
      {state ? <LinkPanel state={state} onState={onState} /> : null}

      {/* Before the first sign-in there is no engine: nothing is counted, paused or synced yet. */}
      {state && (state.signedIn || state.account.kind !== 'none') ? (
        <ProgressPanel
          state={state}
          busy={busy}
          onPause={() => void engineCall('sync:pause', 'pause')}
          onResume={() => void engineCall('sync:resume', 'resume')}
          onSyncNow={() => void engineCall('sync:now', 'start a sync')}
        />
      ) : null}

      {actionError ? (
        <p class="note tone-error" role="alert">
          {actionError}
        </p>
      ) : null}

      <section class="panel" aria-labelledby="queue-h">
        <div class="panel-head">
          <h2 id="queue-h">Files</h2>
          <div class="panel-tools">
            <label class="inline-field">
              <span>Show</span>
              <select value={filter} onChange={(e) => setFilter(e.currentTarget.value as QueueFilter)}>
                {QUEUE_FILTERS.map((f) => (
                  <option key={f} value={f}>
                    {FILTER_LABELS[f]}
                  </option>
                ))}
              </select>
            </label>
          </div>
        </div>
        {queueError ? (
          <div class="note tone-error" role="alert">
            <span>Could not load the file list: {queueError}</span>
            <button type="button" class="btn" onClick={() => void loadQueue()}>
              Try again
            </button>
          </div>
        ) : null}
        {queue === null ? (
          queueError ? null : (
            <p class="muted">Loading…</p>
          )
        ) : queue.length === 0 ? (
          <p class="empty">
            {state && !state.signedIn && state.account.kind === 'none'
              ? 'Nothing is recorded before you sign in: the files of a card are listed here once you do.'
              : filter === 'failed'
                ? 'No file needs you.'
                : 'No files here.'}
          </p>
        ) : (
          <QueueTable items={queue} engine={state?.engine ?? 'idle'} />
        )}
      </section>

      <History cards={cardsSeen(state)} />
    </div>
  );
}

function ProgressPanel(props: {
  state: AppStateView;
  busy: string | null;
  onPause: () => void;
  onResume: () => void;
  onSyncNow: () => void;
}) {
  const { state, busy } = props;
  const p = state.progress;
  // Halted (disk full...) resumes with the same button, once the cause is fixed.
  const paused = resumable(state.engine);
  const still = state.engine === 'halted' ? 'Stopped' : 'Paused';
  const source = p.currentSource ?? state.cards[0]?.label ?? null;
  const pct = p.bytesTotal > 0 ? Math.min(100, Math.floor((p.bytesDone / p.bytesTotal) * 100)) : 0;
  const eta = formatEta(p.etaSeconds);
  // A speed and a time left only while something moves: a finished batch shows neither.
  const moving = state.engine === 'syncing' && p.filesDone + p.filesFailed < p.filesTotal;

  return (
    <section class="panel progress-panel" aria-labelledby="progress-h">
      <div class="panel-head">
        <h2 id="progress-h">
          {state.cards.length > 0 || !source ? (
            'Upload progress'
          ) : (
            <>
              <span class="muted-label">Folder:</span> {visible(source)}
            </>
          )}
        </h2>
        <div class="panel-tools">
          {paused ? (
            <button type="button" class="btn btn-primary" disabled={busy !== null} onClick={props.onResume}>
              Resume
            </button>
          ) : (
            <button type="button" class="btn" disabled={busy !== null} onClick={props.onPause}>
              Pause
            </button>
          )}
          <button
            type="button"
            class="btn"
            disabled={busy !== null || state.engine === 'syncing'}
            onClick={props.onSyncNow}
          >
            Sync now
          </button>
        </div>
      </div>

      {p.filesTotal > 0 ? (
        <>
          <p class="progress-sentence" data-testid="progress-sentence">
            {progressSentence(state)}
          </p>
          <progress
            class="bar"
            max={100}
            value={pct}
            aria-label={`Upload progress: ${pct}%`}
            aria-valuetext={`${pct}%, ${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}`}
          />
          <dl class="stats">
            <div>
              <dt>Uploaded</dt>
              <dd data-testid="stat-bytes">
                {formatBytes(p.bytesDone)} of {formatBytes(p.bytesTotal)} ({pct}%)
              </dd>
            </div>
            <div>
              <dt>Files</dt>
              <dd data-testid="stat-files">
                {p.filesDone.toLocaleString()} of {p.filesTotal.toLocaleString()} done
                {p.filesFailed > 0 ? `, ${p.filesFailed.toLocaleString()} failed` : ''}
              </dd>
            </div>
            <div>
              <dt>Speed</dt>
              <dd data-testid="stat-rate">{paused ? still : moving ? formatRate(p.rate) : '–'}</dd>
            </div>
            <div>
              <dt>Time left</dt>
              <dd data-testid="stat-eta">{moving ? eta || '–' : '–'}</dd>
            </div>
          </dl>
          {moving && (p.lanes?.length ?? 0) > 1 ? (
            <p class="muted" data-testid="progress-lanes">
              {lanesLine(p.lanes ?? [])}
            </p>
          ) : null}
        </>
      ) : (
        <p class="progress-sentence" data-testid="progress-sentence">
          {progressSentence(state)}
        </p>
      )}
    </section>
  );
}

/** The folder part of a path on the card ("DCIM/DJI_..._Bridge-North"), '' at the top. */
function folderOf(relPath: string): string {
  const i = Math.max(relPath.lastIndexOf('/'), relPath.lastIndexOf('\\'));
  return i > 0 ? relPath.slice(0, i) : '(top of the card)';
}

/** Every file with its state in words true for the engine's state; failed ones are retried from "need you" above. */
function QueueTable(props: { items: QueueItemView[]; engine: RunStateName }) {
  return (
    <div class="table-scroll" tabIndex={0} role="region" aria-label="File list">
      <table class="table queue">
        <thead>
          <tr>
            <th scope="col">File</th>
            <th scope="col" class="num">
              Size
            </th>
            <th scope="col">Status</th>
            <th scope="col">Problem</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((item) => (
            <tr key={item.id} data-file={item.name}>
              <td class="file-cell">
                <span class="file-name">{visible(item.name)}</span>
                <span class="file-path">
                  {visible(item.source)} · {visible(folderOf(item.relPath))}
                </span>
              </td>
              <td class="num nowrap">{formatBytes(item.size)}</td>
              <td class="nowrap">
                <span class={`state tone-${fileTone(item, props.engine)}`} data-testid="file-state">
                  {fileStateWords(item, props.engine)}
                </span>
                {item.state === 'uploading' && item.progress !== null ? (
                  <progress
                    class="bar bar-small"
                    max={100}
                    value={Math.floor(item.progress * 100)}
                    aria-label={`${visible(item.name)} progress`}
                  />
                ) : null}
              </td>
              <td class={item.state === 'failed' ? 'problem' : 'problem problem-wait'}>
                {item.error ? visible(item.error.plain) : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * What the cards on screen have said so far (each card's verdict): the
 * history is asked again at once when it changes, so it never says "No card
 * has been synced yet" beside a card's verdict read after it.
 */
function cardsSeen(state: AppStateView | null): string {
  return (state?.cards ?? []).map((c) => `${c.id}\0${c.headline?.message ?? ''}`).join('\n');
}

function History({ cards }: { cards: string }) {
  // A finished card shows up in the history: refresh when the queue moves, at most every 3 s,
  // and at once when a card's verdict changes; each answer knows which verdicts it was asked after.
  const listHistory = async () => {
    const asked = cards;
    const r = await call('history:list', { limit: HISTORY_LIMIT });
    return r.ok ? { ok: true as const, value: { asked, list: r.value } } : r;
  };
  const { value: answer, error, reload: load } = usePushed('push:queue-changed', 3000, listHistory, [cards]);
  // An answer from before the cards' last verdict is not news about them: "No card…" waits for a new one.
  const entries =
    answer === null || (answer.list.length === 0 && answer.asked !== cards) ? null : answer.list;
  const [waylines, setWaylines] = useState<WaylineView[]>([]);
  const [saving, setSaving] = useState<string | null>(null);
  const [notes, setNotes] = useState<Record<string, { tone: 'ok' | 'error'; text: string }>>({});

  useEffect(() => {
    void call('waylines:list', { orderBy: 'name asc', page: 1, pageSize: 100 }).then((r) => {
      if (r.ok) setWaylines(r.value.list);
    });
  }, []);

  const setWayline = async (folder: string, waylineId: string | null): Promise<void> => {
    setSaving(folder);
    const r = await call('history:set-wayline', { folder, waylineId });
    setSaving(null);
    if (r.ok) {
      const name =
        waylineId === null ? 'no wayline' : (waylines.find((w) => w.id === waylineId)?.name ?? 'the wayline');
      setNotes((n) => ({ ...n, [folder]: { tone: 'ok', text: `Saved: ${name}` } }));
      await load();
    } else {
      setNotes((n) => ({ ...n, [folder]: { tone: 'error', text: `Not saved: ${r.error.message}` } }));
    }
  };

  // Group by card, newest first, keeping the order the app gives.
  const groups = new Map<string, { label: string; entries: HistoryEntryView[] }>();
  for (const e of entries ?? []) {
    const g = groups.get(e.sourceId) ?? { label: e.label, entries: [] };
    g.entries.push(e);
    groups.set(e.sourceId, g);
  }

  return (
    <section class="panel" aria-labelledby="history-h">
      <div class="panel-head">
        <h2 id="history-h">Recent syncs</h2>
      </div>
      {error ? (
        <div class="note tone-error" role="alert">
          <span>Could not load the history: {visible(error)}</span>
          <button type="button" class="btn" onClick={() => void load()}>
            Try again
          </button>
        </div>
      ) : null}
      {entries === null ? (
        error ? null : (
          <p class="muted">Loading…</p>
        )
      ) : entries.length === 0 ? (
        <p class="empty">No card has been synced yet.</p>
      ) : (
        [...groups.entries()].map(([sourceId, g]) => (
          <div key={sourceId} class="history-group">
            <h3>{visible(g.label)}</h3>
            <table class="table history">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Flight folder</th>
                  <th scope="col" class="num">
                    Files
                  </th>
                  <th scope="col" class="num">
                    Size
                  </th>
                  <th scope="col" class="num">
                    Took
                  </th>
                  <th scope="col" class="num">
                    Already on server
                  </th>
                  <th scope="col" class="num">
                    Need you
                  </th>
                  <th scope="col">Wayline</th>
                </tr>
              </thead>
              <tbody>
                {g.entries.map((e) => (
                  <tr key={e.id} data-folder={e.folder}>
                    <td class="nowrap">{formatWhen(e.startedAt)}</td>
                    <td class="folder-cell">{e.folder ? visible(e.folder) : 'Whole card'}</td>
                    <td class="num">{e.files.toLocaleString()}</td>
                    <td class="num nowrap">{formatBytes(e.bytes)}</td>
                    <td class="num nowrap">
                      {e.finishedAt === null ? 'Not finished' : formatDuration(e.finishedAt - e.startedAt)}
                    </td>
                    <td class="num">{e.fastUploaded.toLocaleString()}</td>
                    <td
                      class={e.failed !== null && e.failed > 0 ? 'num failed-count' : 'num'}
                      title={
                        e.failed === null ? 'Counted on the newer sync of this flight, above' : undefined
                      }
                    >
                      {e.failed === null ? '–' : e.failed.toLocaleString()}
                    </td>
                    <td class="wayline-cell">
                      {e.folder === '' ? (
                        <span class="muted">{e.wayline ? visible(e.wayline.waylineName) : '–'}</span>
                      ) : (
                        <WaylineSelect
                          entry={e}
                          waylines={waylines}
                          disabled={saving !== null}
                          onChange={(id) => void setWayline(e.folder, id)}
                        />
                      )}
                      {notes[e.folder] ? (
                        <span class={`inline-note tone-${notes[e.folder]?.tone ?? 'ok'}`} role="status">
                          {visible(notes[e.folder]?.text ?? '')}
                        </span>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ))
      )}
      {entries && entries.length > 0 ? (
        <p class="muted small">
          Showing the last {plural(Math.min(entries.length, HISTORY_LIMIT), 'sync')}. “Already on server”
          files were not sent again; “Need you” counts the files of the flight that failed and are not retried
          yet.
        </p>
      ) : null}
    </section>
  );
}

const HOW: Record<'exact' | 'normalised' | 'user', string> = {
  exact: 'matched by name',
  normalised: 'matched by similar name',
  user: 'set by you',
};

function WaylineSelect(props: {
  entry: HistoryEntryView;
  waylines: WaylineView[];
  disabled: boolean;
  onChange: (waylineId: string | null) => void;
}) {
  const { entry, waylines } = props;
  const current = entry.wayline;
  const options = waylines.map((w) => ({ id: w.id, name: w.name }));
  if (current && !options.some((o) => o.id === current.waylineId)) {
    options.unshift({ id: current.waylineId, name: current.waylineName });
  }
  const id = `wl-${entry.id}`;
  return (
    <span class="wayline-select">
      <label class="visually-hidden" for={id}>
        Wayline for {visible(entry.folder)}
      </label>
      <select
        id={id}
        value={current?.waylineId ?? ''}
        disabled={props.disabled}
        onChange={(ev) => props.onChange(ev.currentTarget.value === '' ? null : ev.currentTarget.value)}
      >
        <option value="">None</option>
        {options.map((o) => (
          <option key={o.id} value={o.id}>
            {visible(o.name)}
          </option>
        ))}
      </select>
      {current ? <span class="how">{HOW[current.how]}</span> : null}
    </span>
  );
}
