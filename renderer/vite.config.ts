// Builds the window (renderer/) into renderer/dist, loadable from file:// by Electron.
// Run from the repo root: vite build --config renderer/vite.config.ts
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: './',
  // Vite 8 transforms TS/JSX with oxc: Preact's automatic JSX runtime, no Babel needed.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  clearScreen: false,
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The CSP allows only same-origin scripts and styles: no inline polyfill, no inlined assets.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
