/** Shared by the desktop-shell tests (no tests in here). */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import vm from 'node:vm';
import { vi } from 'vitest';
import type { AppController, PushMessage } from '../../main/electron/controller.js';
import type { Activity } from '../../main/electron/notifications.js';
import type { SecretStore, StoredToken } from '../../main/electron/secrets.js';
import { DJI_FILES, makeCard } from '../support/harness.js';

export const FOLDER = 'DJI_202209021517_001_Waypoint1';

export class MemorySecrets implements SecretStore {
  value: StoredToken | null = null;
  read() {
    return this.value;
  }
  write(v: StoredToken) {
    this.value = v;
  }
  clear() {
    this.value = null;
  }
}

export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 25_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export function recordController(c: AppController) {
  const pushes: PushMessage[] = [];
  const activity: Activity[] = [];
  c.on('push', (m) => pushes.push(m));
  c.on('activity', (a) => activity.push(a));
  return { pushes, activity };
}

/**
 * A card as it arrives in the field: files written by the drone long ago,
 * appearing at once (staged, aged, then moved into place). Fresh copies
 * would sit in the agent's quiet period (a copy still in progress).
 */
export function insertCard(dest: string, folder = FOLDER, files = DJI_FILES): string {
  const staging = `${dest}.staging`;
  makeCard(staging, folder, files);
  const old = new Date(Date.now() - 3_600_000);
  for (const f of fs.readdirSync(path.join(staging, 'DCIM', folder)))
    fs.utimesSync(path.join(staging, 'DCIM', folder, f), old, old);
  if (fs.existsSync(dest)) {
    for (const f of fs.readdirSync(path.join(staging, 'DCIM', folder))) {
      fs.renameSync(path.join(staging, 'DCIM', folder, f), path.join(dest, 'DCIM', folder, f));
    }
    fs.rmSync(staging, { recursive: true });
  } else fs.renameSync(staging, dest);
  return dest;
}

/**
 * Runs a compiled preload the way Electron runs a sandboxed one: wrapped in a
 * function of (require, process, exports, module, Buffer, global, ...) in a
 * fresh JS context without Node, where require knows only 'electron' (a fake).
 */
export function runSandboxedPreload(js: string) {
  const listeners = new Map<string, Set<(...a: unknown[]) => void>>();
  const ipcRenderer = {
    invoke: vi.fn((channel: string, request: unknown) =>
      Promise.resolve({ ok: true, value: { channel, request } }),
    ),
    on: vi.fn((channel: string, fn: (...a: unknown[]) => void) => {
      listeners.set(channel, (listeners.get(channel) ?? new Set()).add(fn));
    }),
    removeListener: vi.fn((channel: string, fn: (...a: unknown[]) => void) =>
      listeners.get(channel)?.delete(fn),
    ),
  };
  const exposed = new Map<string, unknown>();
  const contextBridge = { exposeInMainWorld: vi.fn((key: string, api: unknown) => exposed.set(key, api)) };
  const required: string[] = [];
  const sandboxRequire = (name: string) => {
    required.push(name);
    if (name === 'electron') return { contextBridge, ipcRenderer };
    throw new Error(`module not found: ${name}`);
  };
  const context = vm.createContext({});
  const params = [
    'require',
    'process',
    'exports',
    'module',
    'Buffer',
    'global',
    'setImmediate',
    'clearImmediate',
  ];
  const fn = vm.compileFunction(js, params, { parsingContext: context });
  const exports = {};
  fn(sandboxRequire, {}, exports, { exports }, undefined, context, undefined, undefined);
  const emit = (channel: string, payload: unknown) => {
    for (const l of listeners.get(channel) ?? []) l({ sender: 'ipc-event-with-sender' }, payload);
  };
  return { exposed, contextBridge, ipcRenderer, required, listeners, emit };
}
