/**
 * The V8 flags every agent process starts with, however it is launched:
 * `bin.js`'s first line (`npx drone-media-sync`, an installed command),
 * `npm run cli`, the headless agent of `npm start`, and the desktop app's
 * main process (Electron's `--js-flags`, which V8 reads only at start: the
 * desktop entry and the login item give it, and a desktop app started any
 * other way starts itself once more with it, main/electron/v8-relaunch.ts).
 *
 * --max-semi-space-size=8 (issue 33): V8's young generation grows to 64 MiB
 * semi-spaces here (new space 128 MiB), and a sync of a 10,000-file card
 * keeps it full of short-lived objects: about 100 MiB of the agent's RSS
 * (first sync peak 419-442 MiB without, 306-327 with, 287-308 with the
 * manifest's reused buffers too) for 1-2 % more CPU in runs paired at the
 * same load (39.9/41.9/38.7 s without, 40.3/42.3/39.4 s with).
 *
 * --heap-growing-percent=100 (issue 33): after each full collection V8 lets
 * the old generation grow to up to four times what survived when collecting
 * is fast, as here. The first sync of a 10,000-file card then peaked at
 * 284-328 MiB (sixteen runs, five over the goal of 300): its end (verdict,
 * report, manifest) lands on a heap allowed to double twice over. Growing
 * by 2x at most: 245-248 MiB, for the same CPU in runs paired at the same
 * load (21.0/20.7 s, 21.9/21.8 s; the small-file and survey benches alike
 * within their noise). 25 % took it to 224-259 MiB but cost 12 % more CPU
 * (test/bench/RESULTS.md, session 12).
 *
 * test/cli/node-flags.test.ts holds every launcher to this list.
 */
export const AGENT_V8_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--heap-growing-percent=100'];

/**
 * The environment the agent starts with, beside its V8 flags: bin.js's first
 * line sets it (`env -S NAME=value node …`; npm's Windows shims read it
 * there too) and so does `npm start`'s headless agent.
 *
 * MALLOC_ARENA_MAX=2 (issue 33): glibc gives each thread that allocates its
 * own malloc arena, up to 8 per core; the agent's threads (main, four hash
 * workers, libuv's four, V8's) held five to seven arenas of about 9 MiB each
 * at the peak, mostly free chunks no other thread could use. Two arenas,
 * in runs paired at the same load: first sync of 10,000 files 249/247 ->
 * 231/222 MiB peak RSS, the offload card with no destination (row 6d)
 * 303/303/297 -> 291/291/287 MiB, the same time and CPU (small files 0.53/
 * 0.53 -> 0.48/0.57 of rclone's files per second; test/bench/RESULTS.md,
 * session 13). Ignored where the C library is not glibc (macOS, Windows,
 * musl) and by Electron's own allocator; `npm run cli` (a shell-less npm
 * script on Windows) does not set it.
 */
export const AGENT_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
