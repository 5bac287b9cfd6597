/**
 * The window's only way out: `window.dms`, one function per channel of the
 * IPC contract (main/shared/ipc.ts), plus `on()` for the three push channels.
 *
 * CommonJS on purpose: a sandboxed preload cannot be an ES module and can
 * only require('electron') (and a few polyfills), so the contract module
 * cannot be imported here. The channel lists are copied; a unit test
 * (main/electron/preload.test.ts) fails the build if they drift apart.
 * The renderer never gets ipcRenderer itself, nor the IPC event (its
 * `sender` would be a way back in).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the one import a sandboxed preload has
import electron = require('electron');

const CHANNELS = [
  'app:get-state',
  'queue:list',
  'queue:retry',
  'sync:pause',
  'sync:resume',
  'sync:now',
  'history:list',
  'history:set-wayline',
  'waylines:list',
  'settings:get',
  'settings:save',
  'copies:forget',
  'targets:list',
  'targets:forget',
  'link:answer',
  'link:pin',
  'auth:login',
  'auth:set-token',
  'auth:sign-out',
  'auth:test-connection',
  'flights:list',
  'flights:accept',
  'flights:get',
  'map:tile',
  'dialog:pick-folder',
  'shell:open-log-folder',
  'shell:open-help',
] as const;

const PUSH_CHANNELS: readonly string[] = ['push:state', 'push:progress', 'push:queue-changed'];

const bridge: Record<string, unknown> = {};

for (const channel of CHANNELS) {
  bridge[channel] = (request?: unknown): Promise<unknown> => electron.ipcRenderer.invoke(channel, request);
}

bridge.on = (channel: unknown, listener: unknown): (() => void) => {
  if (typeof channel !== 'string' || !PUSH_CHANNELS.includes(channel)) {
    throw new TypeError(`dms.on: unknown push channel ${String(channel)}`);
  }
  if (typeof listener !== 'function') throw new TypeError('dms.on: the listener must be a function');
  const forward = (_event: Electron.IpcRendererEvent, payload: unknown) => {
    (listener as (payload: unknown) => void)(payload);
  };
  electron.ipcRenderer.on(channel, forward);
  return () => {
    electron.ipcRenderer.removeListener(channel, forward);
  };
};

electron.contextBridge.exposeInMainWorld('dms', Object.freeze(bridge));
