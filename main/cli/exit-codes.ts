/**
 * The exit codes of `sync`, with what each says, for the command and its
 * `--help` (program.ts must not load the command's module to know them).
 */
export const EXIT = { ok: 0, notAllDone: 1, usage: 2, auth: 3, copies: 4, linkWaits: 5 } as const;

/** What each code means, in the order `sync --help` lists them. */
export const EXIT_MEANINGS: readonly (readonly [number, string])[] = [
  [
    EXIT.ok,
    'everything asked was done: every file is in the workspace and every copy asked for is made and verified',
  ],
  [
    EXIT.notAllDone,
    'some files are not done (failed, or left for a later run; each is named with its reason), or a folder named is not there',
  ],
  [EXIT.usage, 'the command was not right (an unknown option, a value that does not fit)'],
  [EXIT.auth, 'sign-in needed: nothing more is sent until you sign in again'],
  [
    EXIT.copies,
    'a local copy asked for (--copy-to or the settings) is not complete and verified; the reason is printed',
  ],
  [
    EXIT.linkWaits,
    'everything this network allows was sent; the rest waits for a better one (metered, roaming, or its data budget used up: `link status`); the last lines say what waits and what to do',
  ],
];

export function exitCodesHelp(): string {
  return ['', 'Exit codes:', ...EXIT_MEANINGS.map(([c, m]) => `  ${c}  ${m}`)].join('\n');
}
