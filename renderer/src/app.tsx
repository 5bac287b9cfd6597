import { visible } from '../../main/shared/visible.js';
import type { AppStateView } from '../../main/shared/ipc.js';
import { useEffect, useState } from 'preact/hooks';
import { bridgeAvailable, call, subscribe } from './bridge.js';
import { Flights } from './flights.js';
import { Overview } from './overview.js';
import { Settings } from './settings.js';
import { Waylines } from './waylines.js';

export type Screen = 'overview' | 'flights' | 'waylines' | 'settings';

const SCREENS: ReadonlyArray<{ id: Screen; label: string }> = [
  { id: 'overview', label: 'Overview' },
  { id: 'flights', label: 'Flights' },
  { id: 'waylines', label: 'Waylines' },
  { id: 'settings', label: 'Settings' },
];

export function App() {
  const [screen, setScreen] = useState<Screen>('overview');
  // Screens stay mounted once opened, so filters and unsaved edits survive a tab switch.
  const [opened, setOpened] = useState<ReadonlySet<Screen>>(() => new Set<Screen>(['overview']));
  const [state, setState] = useState<AppStateView | null>(null);
  const [stateError, setStateError] = useState<string | null>(null);

  useEffect(() => {
    let alive = true;
    void call('app:get-state', undefined).then((r) => {
      if (!alive) return;
      if (r.ok) setState(r.value);
      else setStateError(r.error.message);
    });
    const offs = [
      subscribe('push:state', (s) => {
        setState(s);
        setStateError(null);
      }),
      subscribe('push:progress', (p) => setState((prev) => (prev ? { ...prev, progress: p } : prev))),
    ];
    return () => {
      alive = false;
      for (const off of offs) off();
    };
  }, []);

  const go = (s: Screen): void => {
    // Another screen opens at its top, not where the last one was scrolled to.
    if (s !== screen) window.scrollTo(0, 0);
    setScreen(s);
    setOpened((prev) => (prev.has(s) ? prev : new Set([...prev, s])));
  };

  return (
    <div class="app">
      <header class="topbar">
        <span class="brand">Drone Media Sync</span>
        <nav class="tabs" aria-label="Screens">
          {SCREENS.map((s) => (
            <button
              key={s.id}
              type="button"
              class="tab"
              aria-current={screen === s.id ? 'page' : undefined}
              onClick={() => go(s.id)}
            >
              {s.label}
              {s.id === 'overview' && state && state.failedCount > 0 ? (
                <span class="tab-count" aria-label={`, ${state.failedCount} failed`}>
                  {state.failedCount}
                </span>
              ) : null}
            </button>
          ))}
        </nav>
        {state ? (
          <p class="connection">
            <span class="connection-server">{visible(state.serverLabel)}</span>
            <span class={state.signedIn ? 'pill pill-ok' : 'pill pill-warn'}>
              {state.signedIn ? 'Signed in' : 'Not signed in'}
            </span>
          </p>
        ) : null}
      </header>

      {!bridgeAvailable() ? (
        <p class="banner tone-error app-error" role="alert">
          This window is not connected to Drone Media Sync. Close it and start the app again.
        </p>
      ) : stateError ? (
        <p class="banner tone-error app-error" role="alert">
          Could not read the app’s state: {stateError}
        </p>
      ) : null}

      <main class="content">
        {opened.has('overview') ? (
          <div hidden={screen !== 'overview'}>
            <Overview state={state} onState={setState} onGoToSettings={() => go('settings')} />
          </div>
        ) : null}
        {opened.has('flights') ? (
          <div hidden={screen !== 'flights'}>
            <Flights shown={screen === 'flights'} />
          </div>
        ) : null}
        {opened.has('waylines') ? (
          <div hidden={screen !== 'waylines'}>
            <Waylines />
          </div>
        ) : null}
        {opened.has('settings') ? (
          <div hidden={screen !== 'settings'}>
            <Settings
              onSignedInChange={(signedIn) => setState((prev) => (prev ? { ...prev, signedIn } : prev))}
            />
          </div>
        ) : null}
      </main>
    </div>
  );
}
