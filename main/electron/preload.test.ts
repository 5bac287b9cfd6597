import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { CHANNEL_NAMES, PUSH_CHANNELS } from '../shared/ipc.js';
import { runSandboxedPreload } from '../../test/electron/helpers.js';

// The preload runs here the way Electron runs a sandboxed preload: compiled to
// CommonJS, wrapped in a function of (require, process, exports, module, ...)
// inside a fresh JS context with no Node, and a `require` that only knows
// 'electron' (here a fake: Electron's binary cannot be downloaded here).
const SOURCE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'preload.cts');

function loadPreload() {
  const js = ts.transpileModule(fs.readFileSync(SOURCE, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    fileName: 'preload.cts',
  }).outputText;
  return runSandboxedPreload(js);
}

describe('preload (sandboxed, CommonJS)', () => {
  it('only requires electron and exposes window.dms once, frozen', () => {
    const p = loadPreload();
    expect(p.required).toEqual(['electron']);
    expect(p.contextBridge.exposeInMainWorld).toHaveBeenCalledOnce();
    expect([...p.exposed.keys()]).toEqual(['dms']);
    expect(Object.isFrozen(p.exposed.get('dms'))).toBe(true);
  });

  it('has exactly one function per channel of the contract (the inlined list cannot drift), plus on()', () => {
    const dms = loadPreload().exposed.get('dms') as Record<string, unknown>;
    expect(Object.keys(dms).filter((k) => k !== 'on')).toEqual(CHANNEL_NAMES);
    expect(Object.values(dms).every((v) => typeof v === 'function')).toBe(true);
  });

  it('each function invokes its own channel with the request, and returns the answer', async () => {
    const p = loadPreload();
    const dms = p.exposed.get('dms') as Record<string, (r?: unknown) => Promise<unknown>>;
    for (const channel of CHANNEL_NAMES) {
      const request = { probe: channel };
      await expect(dms[channel]!(request)).resolves.toEqual({ ok: true, value: { channel, request } });
    }
    await dms['app:get-state']!();
    expect(p.ipcRenderer.invoke).toHaveBeenLastCalledWith('app:get-state', undefined);
    expect(p.ipcRenderer.invoke).toHaveBeenCalledTimes(CHANNEL_NAMES.length + 1);
  });

  it('on() accepts only the three push channels, passes the payload without the IPC event, and unsubscribes', () => {
    const p = loadPreload();
    const dms = p.exposed.get('dms') as { on: (c: unknown, l: unknown) => () => void };
    for (const channel of PUSH_CHANNELS) {
      const got: unknown[][] = [];
      const off = dms.on(channel, (...args: unknown[]) => got.push(args));
      p.emit(channel, { n: 1 });
      expect(got).toEqual([[{ n: 1 }]]);
      off();
      p.emit(channel, { n: 2 });
      expect(got).toHaveLength(1);
    }
    // (TypeErrors of the preload's own realm, so matched by message.)
    expect(() => dms.on('app:get-state', () => undefined)).toThrow(/unknown push channel/);
    expect(() => dms.on('electron-internal', () => undefined)).toThrow(/unknown push channel/);
    expect(() => dms.on('push:state', 'not a function')).toThrow(/must be a function/);
    expect([...p.listeners.keys()].every((k) => (PUSH_CHANNELS as string[]).includes(k))).toBe(true);
  });
});
