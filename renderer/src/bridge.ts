/**
 * The window's only door to the app: `window.dms`, put there by the preload
 * (see main/shared/ipc.ts). Types only are imported, so zod stays out of the bundle.
 */
import type {
  Channel,
  DmsBridge,
  PushChannel,
  PushEvents,
  RequestOf,
  ResponseOf,
  Result,
} from '../../main/shared/ipc.js';

export type { Result };

function dms(): DmsBridge | null {
  return (window as unknown as { dms?: DmsBridge }).dms ?? null;
}

export function bridgeAvailable(): boolean {
  return dms() !== null;
}

/** Calls one channel; never throws (a broken bridge becomes a plain-words failure). */
export async function call<C extends Channel>(
  channel: C,
  request: RequestOf<C>,
): Promise<Result<ResponseOf<C>>> {
  const bridge = dms();
  if (bridge === null) {
    return {
      ok: false,
      error: {
        kind: 'no-bridge',
        message: 'This window is not connected to Drone Media Sync. Restart the app.',
      },
    };
  }
  try {
    const fn = bridge[channel] as (r: RequestOf<C>) => Promise<Result<ResponseOf<C>>>;
    return await fn.call(bridge, request);
  } catch {
    return {
      ok: false,
      error: {
        kind: 'ipc',
        message: 'The app did not answer. Try again; if it keeps happening, restart Drone Media Sync.',
      },
    };
  }
}

/** Subscribes to a push channel; returns the unsubscribe function. */
export function subscribe<P extends PushChannel>(
  channel: P,
  listener: (payload: PushEvents[P]) => void,
): () => void {
  const bridge = dms();
  if (bridge === null) return () => undefined;
  return bridge.on(channel, listener);
}
