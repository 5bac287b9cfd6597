/**
 * Object keys.
 *
 * Layout: `<prefix>/[<flight folder>/]<fingerprint>/<file name>`
 *   e.g. `ws-1/media/DJI_202401011200_001/0cc175b9c0f1b6a831c399e269772661/DJI_0001.JPG`
 *
 * - The content MD5 fingerprint is a folder of its own, so two different
 *   files never share a key (same name on two cards, a re-used DJI_0001.JPG
 *   counter), the same file always gets the same key (stable across restarts,
 *   so a crash can be reconciled with `exists`), and the object keeps its
 *   original name when someone downloads it from the bucket console.
 * - Only the file's own name is used, never the card's directory path: the
 *   fingerprint already makes the key unique, and card paths are noise.
 * - Every segment we add is made safe (sanitizeSegment); the prefix comes from
 *   the server and must be kept as-is (keys must start with it), so a prefix
 *   that is itself unsafe is refused rather than silently rewritten.
 *
 * Every object the agent writes (card files, manifests) gets its key from
 * objectKeyOf, and every bucket request is checked by checkObjectKey inside
 * the uploaders (session.ts), whatever key a caller passes: nothing is ever
 * written outside `<prefix>/`.
 */
import { DmsError } from '../errors.js';
import { prefixProblem, shown, storageSettingsError } from './settings.js';

/** S3 and OSS both cap keys at 1024 bytes of UTF-8. */
export const MAX_KEY_BYTES = 1024;
export const MAX_SEGMENT_BYTES = 200;
/** Longest tail kept as an "extension" when a segment is shortened. */
const MAX_EXT_BYTES = 16;

export interface ObjectKeyInput {
  /** `object_key_prefix` from the STS answer; may be empty or end with `/`. */
  prefix: string;
  /** Content MD5 of the file, hex (only the first 32 hex characters are used). */
  fingerprint: string;
  /** Path of the file on the card (its last segment is used) ... */
  relPath?: string;
  /** ... or directly the file name. */
  name?: string;
  /** Optional grouping folder (flight / mission id or folder name). */
  flightFolder?: string;
}

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

// C0/C1 controls, DEL, bidi overrides/isolates (they make names lie in a UI),
// BOM / zero-width no-break space, and characters S3 documents as "avoid" in keys.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\\/{}^%`[\]"<>~#|]/g;
// Unpaired surrogates cannot be encoded as UTF-8 (they would become U+FFFD in transit).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Cuts `s` to at most `maxBytes` UTF-8 bytes on a code point boundary. */
function cutToBytes(s: string, maxBytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of s) {
    const n = utf8Bytes(ch);
    if (used + n > maxBytes) break;
    out += ch;
    used += n;
  }
  return out;
}

/**
 * Makes one key segment safe: NFC, no separators, no control or
 * look-alike-direction characters, never `.`/`..`/empty, at most `maxBytes`
 * UTF-8 bytes (the extension is kept when the name is shortened).
 */
export function sanitizeSegment(raw: string, maxBytes: number = MAX_SEGMENT_BYTES): string {
  let s = raw.replace(LONE_SURROGATE, '_').normalize('NFC').replace(UNSAFE, '_');
  // Leading/trailing blanks are invisible in every UI and trimmed by some tools.
  s = s.trim();
  // Segments made only of dots are path navigation on every file system.
  if (s === '' || /^\.+$/.test(s)) s = '_';
  if (utf8Bytes(s) <= maxBytes) return s;
  const dot = s.lastIndexOf('.');
  const ext = dot > 0 && utf8Bytes(s.slice(dot)) <= MAX_EXT_BYTES ? s.slice(dot) : '';
  const stem = cutToBytes(s.slice(0, s.length - ext.length), Math.max(1, maxBytes - utf8Bytes(ext)));
  return (stem + ext).trim() || '_';
}

/** Splits the server's prefix into segments; refuses one that is unsafe. */
function prefixSegments(prefix: string): string[] {
  const problem = prefixProblem(prefix);
  if (problem !== undefined) throw storageSettingsError('object_key_prefix', problem);
  return prefix.split('/').filter((seg) => seg !== '');
}

const keyTooLong = (): DmsError =>
  new DmsError('invalid-input', 'The object key prefix is too long to build object keys under it.', {
    retryable: false,
  });

/**
 * The key of any object the agent writes: `<prefix>/<segment>/<segment>...`,
 * each segment made safe (sanitizeSegment: a `/`, `..` or control character
 * in one cannot make it leave its place). E.g. a manifest:
 * `objectKeyOf(prefix, ['manifests', folder, 'report.json'])`.
 */
export function objectKeyOf(prefix: string, segments: readonly string[]): string {
  if (segments.length === 0) throw new DmsError('invalid-input', 'An object key needs a name.');
  const key = [...prefixSegments(prefix), ...segments.map((s) => sanitizeSegment(s))].join('/');
  if (utf8Bytes(key) > MAX_KEY_BYTES) throw keyTooLong();
  return key;
}

/** Whether `key` lies under the server's prefix (joined as the builder joins it: `ws/` and `ws` are one prefix). */
export function isUnderPrefix(prefix: string, key: string): boolean {
  const head = prefixSegments(prefix).join('/');
  return head === '' || key.startsWith(`${head}/`);
}

/**
 * The one check before any bucket request (uploaders, session.ts): `key` is
 * under the server's prefix and cannot climb out of it (no `.`, `..` or
 * empty segment, no control characters or backslashes), within 1024 bytes.
 */
export function checkObjectKey(prefix: string, key: string): void {
  const head = prefixSegments(prefix).join('/');
  const refuse = (why: string): DmsError =>
    new DmsError(
      'invalid-input',
      `Refused to write the object ${shown(key)}: ${why}. Nothing was sent to the bucket.`,
      { retryable: false },
    );
  if (head !== '' && !key.startsWith(`${head}/`)) {
    throw refuse(`it is not under the workspace's folder ${shown(`${head}/`)}`);
  }
  const rest = head === '' ? key : key.slice(head.length + 1);
  for (const seg of rest.split('/')) {
    if (seg === '' || /^\.+$/.test(seg)) throw refuse('it has an empty, . or .. segment');
    if (prefixProblem(seg) !== undefined) throw refuse('it contains control characters or backslashes');
  }
  if (utf8Bytes(key) > MAX_KEY_BYTES) throw refuse(`it is longer than ${MAX_KEY_BYTES} bytes`);
}

function fileNameOf(input: ObjectKeyInput): string {
  const raw = input.name ?? input.relPath ?? '';
  // Card paths may come from Windows: both separators end a directory.
  const parts = raw.split(/[\\/]/).filter((p) => p !== '');
  return parts[parts.length - 1] ?? '';
}

/** Builds the object key for one file; see the layout at the top of this file. */
export function buildObjectKey(input: ObjectKeyInput): string {
  const fp = /^[0-9a-f]{32}/i.exec(input.fingerprint.trim())?.[0]?.toLowerCase();
  if (fp === undefined) {
    throw new DmsError(
      'invalid-input',
      'An object key needs the MD5 fingerprint of the file (32 hex characters).',
      {
        retryable: false,
      },
    );
  }
  const head = [...prefixSegments(input.prefix)];
  const prefixLength = head.length;
  if (input.flightFolder !== undefined && input.flightFolder.trim() !== '') {
    head.push(sanitizeSegment(input.flightFolder.replace(/[\\/]/g, '_'), 100));
  }
  head.push(fp);
  const headBytes = utf8Bytes(head.join('/')) + 1;
  // A long prefix leaves less room for the name; below 40 bytes names stop being useful.
  const budget = Math.min(MAX_SEGMENT_BYTES, MAX_KEY_BYTES - headBytes);
  if (budget < 40) throw keyTooLong();
  return objectKeyOf(input.prefix, [...head.slice(prefixLength), sanitizeSegment(fileNameOf(input), budget)]);
}
