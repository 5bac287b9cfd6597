/**
 * Flights: each flight folder of the cards, with its completeness (from the
 * exposure log), and its map. Click a point for its file and its problem.
 */
import { visible } from '../../main/shared/visible.js';
import type { FlightPointView, FlightSummaryView, FlightView } from '../../main/shared/ipc.js';
import { POINT_STYLES, flightSummaryWords, pointStyle } from '../../main/shared/flight-map.js';
import { useEffect, useState } from 'preact/hooks';
import { call } from './bridge.js';
import { FlightMap } from './flight-map.js';

const lastSegment = (folder: string): string => folder.split('/').pop() ?? folder;
const nameOf = (f: FlightSummaryView): string => f.name ?? f.missionName ?? lastSegment(f.folder);
const same = (a: FlightSummaryView, b: FlightSummaryView): boolean =>
  a.cardId === b.cardId && a.folder === b.folder && (a.part ?? null) === (b.part ?? null);

/** "08:15:12–08:15:34 UTC · 3–80 m above take-off · 0.43 ha · no MRK": what is known of the flight. */
function summaryLine(f: FlightSummaryView): string {
  if (!f.summary) return '';
  return [...flightSummaryWords(f.summary), ...(f.summary.mrk.length ? [] : ['no MRK'])].join(' · ');
}

/** The photos to look at before leaving the site, each with why; nothing was deleted. */
function FramesToCheck(props: { flight: FlightSummaryView }) {
  const frames = props.flight.frames ?? [];
  const clock = props.flight.clock ?? [];
  if (frames.length === 0 && clock.length === 0) return null;
  const bad = frames.filter((f) => f.unusable).length;
  return (
    <div class="flight-frames">
      <h3>
        Photos to look at: {bad} probably unusable
        {frames.length > bad ? `, ${frames.length - bad} worth a look` : ''}
      </h3>
      <ul>
        {frames.map((f) => (
          <li key={f.file} class={f.unusable ? 'frame-unusable' : 'frame-hint'}>
            <strong>{visible(f.file)}</strong>
            {f.capturedAt ? <span class="muted"> {visible(f.capturedAt.slice(11, 19))}</span> : null}
            {f.gpsTime ? (
              <span class="muted"> (GPS {visible(f.gpsTime.slice(11, 19))} UTC)</span>
            ) : null}: {visible(f.reasons.join('; '))}
          </li>
        ))}
      </ul>
      {clock.map((c, i) => (
        <p key={i} class="flight-clock">
          {visible(c)}
        </p>
      ))}
      <p class="muted">Nothing was deleted or held back: the photos stay on the card and in the copies.</p>
    </div>
  );
}

/** The crew's minimum height, as the tab says it ("below 30 m, set in Settings"). */
function minHeightLine(m: number | null): string {
  return m === null
    ? 'Too low: no minimum height is set (Settings, Flight checks).'
    : `Too low: below ${m.toLocaleString('en')} m, set in Settings.`;
}

function rtkLine(f: FlightSummaryView): string {
  const c = f.rtkCounts;
  if (!c) return 'No exposure log (MRK)';
  return `RTK: ${c.fixed} fixed, ${c.float} float, ${c.single + c.none} single`;
}

function PointDetails(props: { point: FlightPointView | null }) {
  const p = props.point;
  if (!p) return <p class="muted point-details">Click a point on the map to see its file and any problem.</p>;
  const style = pointStyle(p.state);
  return (
    <div class="point-details" aria-live="polite">
      <h3>
        Exposure {p.index ?? '?'} <span class={`state-chip state-${p.state}`}>{style.label}</span>
      </h3>
      <p class="point-files">{p.files.length > 0 ? visible(p.files.join(', ')) : 'No photo on the card'}</p>
      {p.problem ? <p class="point-problem">{visible(p.problem)}</p> : <p class="muted">No problem.</p>}
      <p class="muted">
        {p.lat.toFixed(6)}, {p.lng.toFixed(6)}
        {p.gimbalYaw !== null ? ` · gimbal ${Math.round(p.gimbalYaw)}°` : ''}
      </p>
    </div>
  );
}

export function Flights(props: { shown?: boolean }) {
  const [list, setList] = useState<FlightSummaryView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [current, setCurrent] = useState<FlightView | null>(null);
  const [point, setPoint] = useState<FlightPointView | null>(null);
  /** undefined while main has not said; null: no minimum height set. */
  const [minHeight, setMinHeight] = useState<number | null | undefined>(undefined);

  const open = (f: FlightSummaryView): void => {
    setPoint(null);
    const part = f.part ?? undefined;
    void call('flights:get', { cardId: f.cardId, folder: f.folder, ...(part ? { part } : {}) }).then((r) => {
      if (r.ok) setCurrent(r.value);
      else setError(r.error.message);
    });
  };

  const accept = (f: FlightView): void => {
    void call('flights:accept', { cardId: f.cardId, folder: f.folder }).then((r) => {
      if (!r.ok) return setError(r.error.message);
      setCurrent({ ...f, accepted: true });
      setList(
        (prev) =>
          prev?.map((x) => (x.cardId === f.cardId && x.folder === f.folder ? { ...x, accepted: true } : x)) ??
          prev,
      );
    });
  };

  // Read again each time the tab is shown: Settings may have changed it meanwhile.
  useEffect(() => {
    if (props.shown === false) return;
    void call('settings:get', undefined).then((r) => {
      if (r.ok) setMinHeight(r.value.flightMinHeightM ?? null);
    });
  }, [props.shown]);

  useEffect(() => {
    void call('flights:list', {}).then((r) => {
      if (!r.ok) return setError(r.error.message);
      setList(r.value);
      if (r.value[0]) open(r.value[0]);
    });
  }, []);

  return (
    <section class="screen flights" aria-label="Flights">
      {error ? (
        <p class="banner tone-error" role="alert">
          {visible(error)}
        </p>
      ) : null}
      <div class="flights-layout">
        <div class="panel flight-list">
          <h2>Flights</h2>
          {list === null ? <p class="muted">Reading the flights…</p> : null}
          {list?.length === 0 ? <p class="muted">No flight on the cards seen so far.</p> : null}
          {minHeight !== undefined ? <p class="muted flight-min-height">{minHeightLine(minHeight)}</p> : null}
          <ul>
            {list?.map((f) => (
              <li key={`${f.cardId}/${f.folder}/${f.part ?? ''}`}>
                <button
                  type="button"
                  class="flight-item"
                  aria-current={current && same(current, f) ? 'true' : undefined}
                  onClick={() => open(f)}
                >
                  <span class="flight-name">{visible(nameOf(f))}</span>
                  <span class="muted">
                    {visible(f.cardLabel)} · {f.photos} photos
                    {f.summary?.start ? ` · ${f.summary.start.slice(11, 16)} UTC` : ''}
                  </span>
                  {f.frames?.some((x) => x.unusable) ? (
                    <span class="pill pill-warn frames-pill">
                      {f.frames.filter((x) => x.unusable).length} to look at
                    </span>
                  ) : null}
                  <span class={f.incomplete && !f.accepted ? 'pill pill-warn' : 'pill pill-ok'}>
                    {f.incomplete ? (f.accepted ? 'Accepted' : 'Incomplete') : 'Complete'}
                  </span>
                </button>
              </li>
            ))}
          </ul>
        </div>
        {current ? (
          <div class="panel flight-detail">
            <div class="panel-head">
              <h2 class="flight-title">{visible(current.name ?? lastSegment(current.folder))}</h2>
              {current.summary ? <p class="muted flight-summary">{visible(summaryLine(current))}</p> : null}
              <p class="muted flight-facts">
                {current.photos} photos · {current.exposuresInMrk ?? '–'} exposures in the MRK ·{' '}
                {rtkLine(current)}
                {current.wayline ? ` · wayline ${visible(current.wayline.name)}` : ''}
              </p>
            </div>
            {current.incomplete && !current.accepted ? (
              <p class="flight-accept">
                This flight stops “safe to format” for its card. If it is fine as it is (the missing photos
                were never taken, or are kept elsewhere), accept it.{' '}
                <button type="button" class="btn" onClick={() => accept(current)}>
                  Accept this flight as it is
                </button>
              </p>
            ) : null}
            {current.incomplete && current.accepted ? (
              <p class="muted flight-accepted">Accepted as it is: it no longer stops “safe to format”.</p>
            ) : null}
            {current.flags.length > 0 ? (
              <ul class="flight-flags">
                {current.flags.map((f, i) => (
                  <li key={i} class={f.severity === 'incomplete' ? 'flag-incomplete' : 'flag-warning'}>
                    {visible(f.message)}
                  </li>
                ))}
              </ul>
            ) : (
              <p class="flight-complete">Complete: every exposure of the log has its photo.</p>
            )}
            <FramesToCheck flight={current} />
            <div class="flight-body">
              <FlightMap flight={current} selected={point?.index ?? null} onSelect={setPoint} />
              <aside class="flight-side">
                <ul class="map-legend" aria-label="Legend">
                  {POINT_STYLES.map((s) => (
                    <li key={s.state} data-state={s.state}>
                      <span class={`swatch state-${s.state}`} aria-hidden="true" />
                      {s.label} ({current.points.filter((p) => p.state === s.state).length})
                    </li>
                  ))}
                  {current.wayline?.start ? (
                    <li>
                      <span class="swatch wayline" aria-hidden="true" />
                      Wayline start
                    </li>
                  ) : null}
                </ul>
                <PointDetails point={point} />
              </aside>
            </div>
          </div>
        ) : null}
      </div>
    </section>
  );
}
