// ESLint flat config: typescript-eslint with type information, so that
// no-floating-promises (an unawaited upload is a lost file) is enforced.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The electron package itself (only the shell may load it). */
const ELECTRON_PACKAGE = '^electron(/|$)';
/** A relative import that goes through a folder of one of these names (main/electron, main/cli...). */
const into = (...folders) => `^\\.\\.?/(.*/)?(${folders.join('|')})(/|$)`;
/** no-restricted-imports for `files`: an import whose text matches one of `regexes` is refused with `message`. */
const layer = (files, message, regexes) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: regexes.map((regex) => ({ regex, message })) }] },
});

export default tseslint.config(
  { ignores: ['dist/', 'out/', 'node_modules/', 'renderer/dist/', 'test-results/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', '*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  // The layering (README, "Architecture"): which part may import which.
  layer(
    ['main/core/**'],
    'The engine (main/core) imports nothing of the shell, the CLI, the service or the window.',
    [ELECTRON_PACKAGE, into('electron', 'cli', 'service', 'renderer')],
  ),
  // The upload lane and the copy lane are peers under the agent: the engine gets the copies' port
  // (sync/copy-port.ts) as values, never the copies themselves (issue 29). Repeats the core's layer
  // (a later entry replaces the rule's options for its files).
  layer(
    ['main/core/sync/engine.ts'],
    'The engine imports nothing of the shell, the CLI, the service or the window, nor the copies or their lane: it is handed their port (sync/copy-port.ts).',
    [
      ELECTRON_PACKAGE,
      into('electron', 'cli', 'service', 'renderer'),
      '^\\./local-copies(\\.js)?$',
      '^\\./copy-lane(\\.js)?$',
    ],
  ),
  // The copy lane gets the upload lane as values (sync/copy-port.ts UploadPort): it never runs the engine.
  layer(
    ['main/core/sync/copy-lane.ts'],
    'The copy lane imports nothing of the shell, the CLI, the service or the window; the upload lane only as its port (sync/copy-port.ts).',
    [ELECTRON_PACKAGE, into('electron', 'cli', 'service', 'renderer'), '^\\./(engine|steps|bucket)(\\.js)?$'],
  ),
  layer(['main/service/**'], 'The reference service imports nothing of the shell, the CLI or the window.', [
    ELECTRON_PACKAGE,
    into('electron', 'cli', 'renderer'),
  ]),
  layer(['main/electron/**'], 'The desktop shell does not import the CLI.', [into('cli')]),
  layer(['main/cli/**'], 'The CLI does not import the desktop shell.', [into('electron')]),
  layer(['main/shared/**'], 'main/shared is plain data and pure functions: it imports nothing of main/.', [
    ELECTRON_PACKAGE,
    '^\\.\\./',
  ]),
  layer(['renderer/src/**'], 'The window imports only its own files, packages, and main/shared.', [
    ELECTRON_PACKAGE,
    '^\\.\\./(?!\\.\\./main/shared/)',
  ]),
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // Tests poke at untyped JSON answers on purpose.
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
