/**
 * Text from outside (file and folder names from a card, wayline names, a
 * server's messages) made safe to show: every character that would act on a
 * terminal or a layout instead of being seen is replaced by a visible escape.
 * A name or a message can then neither clear the screen, colour a line, set a
 * window title (ANSI/OSC escapes), start a forged line (CR, LF, U+2028),
 * nor turn the text around it backwards (bidi overrides such as U+202E).
 *
 * Shown as:
 * - ESC as `\e`, LF `\n`, CR `\r`, TAB `\t`, NUL `\0`;
 * - other C0 controls, DEL and C1 controls as `\xHH` (U+009B is a one-byte CSI
 *   on some terminals);
 * - format characters (bidi embeddings, overrides and isolates, LRM/RLM/ALM,
 *   zero-width space, word joiner, BOM, soft hyphen, tag characters...), the
 *   line and paragraph separators and lone surrogates as `\uXXXX` (`\u{XXXXX}`
 *   past the BMP).
 * Kept: ZWNJ and ZWJ (U+200C, U+200D): Persian, Indic scripts and emoji need
 * them, and they move nothing. Backslashes are kept as they are (Windows paths).
 *
 * Plain JavaScript without Node or DOM: the engine, the CLI and the window use it.
 */

const NAMED: Readonly<Record<string, string>> = {
  '\u001b': '\\e',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\u0000': '\\0',
};

const KEPT = new Set(['\u200c', '\u200d']);

// Controls (Cc), format characters (Cf), line/paragraph separators, lone surrogates.
const UNSAFE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/gu;

function escapeOne(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const cp = ch.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase();
  if (cp < 0x100) return `\\x${hex.padStart(2, '0')}`;
  return cp > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, '0')}`;
}

/** The text with every control, bidi and invisible formatting character shown as an escape. */
export function visible(text: unknown): string {
  const s = typeof text === 'string' ? text : String(text);
  return s.replace(UNSAFE, (ch) => (KEPT.has(ch) ? ch : escapeOne(ch)));
}

// What JSON.stringify leaves raw although a terminal acts on it: C1 controls,
// format characters, U+2028/2029 and lone surrogates (C0 it already escapes).
const JSON_UNSAFE = /[\u007f-\u009f\p{Cf}\u2028\u2029]|[\ud800-\udfff]/gu;
// eslint-disable-next-line no-control-regex -- every ASCII character but DEL, C0 included (JSON escapes C0)
const NOT_ASCII = /[^\u0000-\u007e]+/g;

/**
 * Serialised JSON (a `--json` line, a log line) with the characters a
 * terminal would act on written as `\uXXXX` escapes: the same JSON value,
 * nothing in it that moves the cursor or turns text around. Such characters
 * can only stand inside JSON strings, where `\uXXXX` means the same.
 */
export function safeJsonText(json: string): string {
  // Every such character is above U+007E: the Unicode-aware search runs only over the runs
  // of non-ASCII characters (a surrogate pair is never split), not over all of a line (a
  // re-inserted card's 3 MB verdict line: 60-150 ms, issue 33).
  return json.replace(NOT_ASCII, (run) => run.replace(JSON_UNSAFE, escapeUnits));
}

function escapeUnits(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}
