import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import * as asar from '@electron/asar';
import { FuseState, FuseV1Options, FuseVersion, getCurrentFuseWire } from '@electron/fuses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JS_FLAGS_ARG } from '../../main/electron/v8-relaunch.js';
import { CHANNEL_NAMES } from '../../main/shared/ipc.js';
import { runSandboxedPreload } from './helpers.js';

// Packs the app the way a release does (the build output, then
// electron-builder with electron-builder.yml as it is) in a temporary copy of
// the project, offline: the Electron runtime, whose binary cannot be
// downloaded here, is replaced by a stand-in folder holding an executable
// named like the real one, which is all `--dir` needs on Linux. The stand-in
// carries a fuse wire as the real binary does (the sentinel @electron/fuses
// looks for, then Electron's default states), so the fuses electron-builder
// flips are read back from the packed binary. Only the Linux layout is stood in for.

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const yaml = require('js-yaml') as { load(text: string): unknown };
interface BuilderConfig {
  appId: string;
  files: string[];
  asarUnpack: string[];
  npmRebuild: boolean;
  electronFuses: Record<string, boolean>;
  linux: { target: string[]; executableArgs: string[] };
  win: { target: string[] };
  mac: { target: string[] };
}
const config = yaml.load(fs.readFileSync(path.join(REPO, 'electron-builder.yml'), 'utf8')) as BuilderConfig;
const onLinux = process.platform === 'linux';

/** The fuse wire of a released Electron binary: its sentinel, wire version 1, 9 fuses in their default states. */
const FUSE_SENTINEL = 'dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX';
const ELECTRON_DEFAULT_FUSES: Record<FuseV1Options, FuseState> = {
  [FuseV1Options.RunAsNode]: FuseState.ENABLE,
  [FuseV1Options.EnableCookieEncryption]: FuseState.DISABLE,
  [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: FuseState.ENABLE,
  [FuseV1Options.EnableNodeCliInspectArguments]: FuseState.ENABLE,
  [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: FuseState.DISABLE,
  [FuseV1Options.OnlyLoadAppFromAsar]: FuseState.DISABLE,
  [FuseV1Options.LoadBrowserProcessSpecificV8Snapshot]: FuseState.DISABLE,
  [FuseV1Options.GrantFileProtocolExtraPrivileges]: FuseState.ENABLE,
  [FuseV1Options.WasmTrapHandlers]: FuseState.ENABLE,
};
/** What a shipped Drone Media Sync must have; the fuses not named keep Electron's default. */
const SHIPPED_FUSES: Partial<Record<FuseV1Options, FuseState>> = {
  [FuseV1Options.RunAsNode]: FuseState.DISABLE,
  [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: FuseState.DISABLE,
  [FuseV1Options.EnableNodeCliInspectArguments]: FuseState.DISABLE,
  [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: FuseState.ENABLE,
  [FuseV1Options.OnlyLoadAppFromAsar]: FuseState.ENABLE,
  [FuseV1Options.EnableCookieEncryption]: FuseState.ENABLE,
};

function standInElectron(file: string): void {
  const wire = Object.values(ELECTRON_DEFAULT_FUSES);
  fs.writeFileSync(
    file,
    Buffer.concat([
      Buffer.from('#!/bin/sh\necho "stand-in for the Electron binary"\nexit 0\n'),
      Buffer.from(FUSE_SENTINEL),
      Buffer.from([Number(FuseVersion.V1), wire.length, ...wire]),
    ]),
    { mode: 0o755 },
  );
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number): string {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, CI: 'true', npm_config_offline: 'true' },
  });
  const out = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  if (r.status !== 0)
    throw new Error(
      `${path.basename(cmd)} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${out.slice(-4000)}`,
    );
  return out;
}

/** Sources (.ts and .cts under main/) whose compiled file is missing or older than they are. */
function staleOutputs(src: string, out: string): string[] {
  const stale: string[] = [];
  for (const entry of fs.readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !/\.c?ts$/.test(entry.name) || /\.d\.ts$|\.test\.ts$/.test(entry.name)) continue;
    const file = path.join(entry.parentPath, entry.name);
    const compiled = path
      .join(out, path.relative(src, file))
      .replace(/\.ts$/, '.js')
      .replace(/\.cts$/, '.cjs');
    if (!fs.existsSync(compiled) || fs.statSync(compiled).mtimeMs < fs.statSync(file).mtimeMs)
      stale.push(path.relative(REPO, file));
  }
  return stale;
}

describe('electron-builder.yml', () => {
  it('targets AppImage + deb, nsis, dmg; keeps better-sqlite3 unpacked; packs the compiled app and the window', () => {
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.win.target).toEqual(['nsis']);
    expect(config.mac.target).toEqual(['dmg']);
    expect(config.asarUnpack).toEqual(
      expect.arrayContaining([expect.stringMatching(/^node_modules\/better-sqlite3\//)]),
    );
    expect(config.files).toEqual(
      expect.arrayContaining(['package.json', 'dist/main/**/*', 'renderer/dist/**/*']),
    );
    expect(config.appId).toBe('com.dronemediasync.app'); // = app.setAppUserModelId in main.ts
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    expect(pkg.main).toBe('dist/main/electron/main.js');
  });

  it('sets the fuses of a shipped app and rebuilds nothing (better-sqlite3 is Node-API)', () => {
    expect(config.electronFuses).toEqual({
      runAsNode: false,
      enableNodeOptionsEnvironmentVariable: false,
      enableNodeCliInspectArguments: false,
      enableEmbeddedAsarIntegrityValidation: true,
      onlyLoadAppFromAsar: true,
      enableCookieEncryption: true,
    });
    expect(config.npmRebuild).toBe(false);
  });

  it("the Linux desktop entry starts the app with the agent's V8 flags, quoted as one argument", () => {
    // electron-builder writes executableArgs into Exec verbatim (LinuxTargetHelper): the quotes are ours.
    expect(config.linux.executableArgs).toEqual([`"${JS_FLAGS_ARG}"`]);
  });
});

describe.skipIf(!onLinux)('the packaged app (Linux --dir build with a stand-in Electron)', () => {
  let work: string;
  let unpacked: string;
  let resources: string;
  let listing: Set<string>;
  let usedRealRenderer = false;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-pack-'));
    const project = path.join(work, 'project');
    fs.mkdirSync(project);
    for (const f of ['package.json', 'package-lock.json', 'electron-builder.yml'])
      fs.copyFileSync(path.join(REPO, f), path.join(project, f));
    fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(project, 'node_modules'), 'dir');

    // The build output of `npm run build` (npm test builds first). A stale build would test old code: refused.
    const dist = path.join(REPO, 'dist', 'main');
    const stale = staleOutputs(path.join(REPO, 'main'), dist);
    if (stale.length)
      throw new Error(
        `dist/ is missing or older than its sources (run npm run build): ${stale.slice(0, 5).join(', ')}`,
      );
    fs.cpSync(dist, path.join(project, 'dist', 'main'), { recursive: true });

    // The window as Vite built it, or a placeholder when it has not been built (never written into the repo).
    const rendererDist = path.join(project, 'renderer', 'dist');
    fs.mkdirSync(rendererDist, { recursive: true });
    const built = path.join(REPO, 'renderer', 'dist', 'index.html');
    usedRealRenderer = fs.existsSync(built);
    if (usedRealRenderer) fs.cpSync(path.dirname(built), rendererDist, { recursive: true });
    else fs.writeFileSync(path.join(rendererDist, 'index.html'), '<!doctype html><title>placeholder</title>');

    const electronDist = path.join(work, 'electron-dist');
    fs.mkdirSync(electronDist);
    standInElectron(path.join(electronDist, 'electron'));

    const out = path.join(work, 'out');
    run(
      process.execPath,
      [
        require.resolve('electron-builder/cli.js'),
        '--dir',
        '--linux',
        '--x64',
        `-c.electronDist=${electronDist}`,
        `-c.directories.output=${out}`,
        '--publish',
        'never',
      ],
      project,
      120_000,
    );
    unpacked = path.join(out, 'linux-unpacked');
    resources = path.join(unpacked, 'resources');
    listing = new Set(
      asar
        .listPackage(path.join(resources, 'app.asar'), { isPack: false })
        .map((p) => p.replaceAll('\\', '/')),
    );
  }, 180_000);

  afterAll(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('app.asar holds package.json, the compiled shell and core, and the window', () => {
    for (const f of [
      '/package.json',
      '/dist/main/electron/main.js',
      '/dist/main/electron/app.js',
      '/dist/main/electron/preload.cjs',
      '/dist/main/core/agent.js',
      '/dist/main/core/queue/queue.js',
      '/dist/main/core/hash/workers.js',
      '/dist/main/core/hash/hash-worker.js',
      '/dist/main/service/index.js',
      '/dist/main/shared/ipc.js',
      '/renderer/dist/index.html',
    ]) {
      expect(listing.has(f), `${f} in app.asar`).toBe(true);
    }
    const pkg = JSON.parse(asar.extractFile(path.join(resources, 'app.asar'), 'package.json').toString());
    expect(pkg).toMatchObject({ main: 'dist/main/electron/main.js', type: 'module' });
    // No sources, source maps or tests in the package.
    expect(
      [...listing].filter((f) => !f.startsWith('/node_modules/') && /\.(ts|cts|map)$|\.test\./.test(f)),
    ).toEqual([]);
  });

  it(`the window is packed (${'real Vite build or placeholder'})`, () => {
    expect(listing.has('/renderer/dist/index.html')).toBe(true);
    if (usedRealRenderer) {
      const html = asar.extractFile(path.join(resources, 'app.asar'), 'renderer/dist/index.html').toString();
      expect(html).toContain('Content-Security-Policy');
    }
  });

  it('the packed Electron binary has the fuses of a shipped app, read back from it', async () => {
    const exe = path.join(
      unpacked,
      JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).name,
    );
    const wire = await getCurrentFuseWire(exe);
    expect(wire.version).toBe(FuseVersion.V1);
    const { version: _version, ...states } = wire;
    expect(states).toEqual({ ...ELECTRON_DEFAULT_FUSES, ...SHIPPED_FUSES });
  });

  it("better-sqlite3 is unpacked next to the asar, loads there, and binds only Node-API (any Electron's ABI)", () => {
    const pkgDir = path.join(resources, 'app.asar.unpacked', 'node_modules', 'better-sqlite3');
    const binary = path.join(pkgDir, 'prebuilds', 'linux-x64.node');
    expect(fs.existsSync(binary)).toBe(true);
    // Neither the binaries for musl libc nor the C sources.
    expect(fs.readdirSync(path.join(pkgDir, 'prebuilds')).filter((f) => f.startsWith('linuxmusl'))).toEqual(
      [],
    );
    expect(fs.readdirSync(pkgDir).filter((f) => f === 'deps' || f === 'src')).toEqual([]);
    // Opened from the packed copy by a plain Node process: a real database answers.
    const version = run(
      process.execPath,
      [
        '-e',
        'const D = require(process.argv[1]); console.log(new D(":memory:").pragma("user_version", { simple: true }))',
        pkgDir,
      ],
      work,
      30_000,
    );
    expect(version.trim()).toBe('0');
    // Node-API: registers through napi_register_module_v1 and takes nothing from V8 or Node's C++ ABI.
    const defined = run('nm', ['-D', '--defined-only', binary], work, 30_000);
    expect(defined).toMatch(/ T napi_register_module_v1$/m);
    const needed = run('nm', ['-D', '--undefined-only', binary], work, 30_000);
    expect(needed).toMatch(/ U napi_create_function$/m);
    expect(needed.split('\n').filter((l) => /_ZN2v8|_ZN4node|node_module_register/.test(l))).toEqual([]);
  });

  it('every module the shell imports at run time is in the package (no dev dependency, no missing file)', () => {
    const missing: string[] = [];
    let seen = 0;
    const jsFiles = [...listing].filter((f) => f.startsWith('/dist/main/') && f.endsWith('.js'));
    for (const file of jsFiles) {
      const text = asar.extractFile(path.join(resources, 'app.asar'), file.slice(1)).toString();
      const specs = [
        ...text.matchAll(/^\s*(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]/gm),
        ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
        ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ].map((m) => m[1]!);
      seen += specs.length;
      for (const spec of specs) {
        if (spec.startsWith('node:') || spec === 'electron') continue;
        if (spec.startsWith('.')) {
          const target = path.posix.join(path.posix.dirname(file), spec);
          if (!listing.has(target)) missing.push(`${file} -> ${spec}`);
        } else {
          const pkgName = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          if (!listing.has(`/node_modules/${pkgName}/package.json`)) missing.push(`${file} -> ${pkgName}`);
        }
      }
    }
    expect(seen).toBeGreaterThan(100); // the scanner does see the imports
    expect(missing).toEqual([]);
  });

  it('the packed hash worker needs nothing but Node and hashes in a worker thread', async () => {
    const js = asar
      .extractFile(path.join(resources, 'app.asar'), 'dist/main/core/hash/hash-worker.js')
      .toString();
    // Loaded by itself in its thread (hash/workers.ts): no import but Node's own.
    const specs = [...js.matchAll(/^\s*import\s[^'";]*?from\s*['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
    expect(specs.length).toBeGreaterThan(0);
    expect(specs.filter((s) => !s.startsWith('node:'))).toEqual([]);
    const file = path.join(work, 'hash-worker.mjs');
    fs.writeFileSync(file, js);
    const worker = new Worker(file, { workerData: 'dms-hash-worker' });
    try {
      const reply = new Promise<unknown>((resolve, reject) => {
        worker.on('message', (m: { md5?: string }) => (m.md5 ? resolve(m.md5) : undefined));
        worker.on('error', reject);
      });
      const flag = new Int32Array(new SharedArrayBuffer(4));
      worker.postMessage({ op: 'file', id: 1, path: file, bufferSize: 4096, flag });
      expect(await reply).toBe(createHash('md5').update(fs.readFileSync(file)).digest('hex'));
    } finally {
      await worker.terminate();
    }
  });

  it('the packed hash worker reads a copy back, with XXH3 where its binary is there, else MD5', async () => {
    // electron-builder leaves napi-rs's per-platform packages out (@node-rs/xxhash-linux-x64-gnu):
    // the packed worker must still verify a copy, with MD5, and say which digest it made.
    const js = asar
      .extractFile(path.join(resources, 'app.asar'), 'dist/main/core/hash/hash-worker.js')
      .toString();
    const file = path.join(work, 'hash-worker-readback.mjs');
    fs.writeFileSync(file, js);
    const worker = new Worker(file, { workerData: 'dms-hash-worker' });
    try {
      const reply = new Promise<{ xxh3?: string; error?: unknown }>((resolve, reject) => {
        worker.on('message', (m: { xxh3?: string; error?: unknown }) => resolve(m));
        worker.on('error', reject);
      });
      worker.postMessage({ op: 'readback', id: 1, path: file, bufferSize: 4096 });
      const r = await reply;
      expect(r.error).toBeUndefined();
      const md5 = `md5:${createHash('md5').update(fs.readFileSync(file)).digest('hex')}`;
      expect(r.xxh3 === md5 || /^[0-9a-f]{16}$/.test(r.xxh3 ?? '')).toBe(true);
    } finally {
      await worker.terminate();
    }
  });

  it('the packed preload runs in a sandbox and exposes every channel', () => {
    const js = asar
      .extractFile(path.join(resources, 'app.asar'), 'dist/main/electron/preload.cjs')
      .toString();
    const p = runSandboxedPreload(js);
    expect(p.required).toEqual(['electron']);
    const dms = p.exposed.get('dms') as Record<string, unknown>;
    expect(Object.keys(dms).filter((k) => k !== 'on')).toEqual(CHANNEL_NAMES);
  });
});
