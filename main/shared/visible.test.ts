import { describe, expect, it } from 'vitest';
import { safeJsonText, visible } from './visible.js';

describe('visible: outside text made safe to show', () => {
  it.each([
    ['plain ASCII', 'DJI_0001.JPG', 'DJI_0001.JPG'],
    ['accents, CJK and emoji stay', 'Brücke 桥 🚁.JPG', 'Brücke 桥 🚁.JPG'],
    ['ZWJ emoji and ZWNJ (Persian) stay', '👩\u200d🚒 می\u200cخواهم', '👩\u200d🚒 می\u200cخواهم'],
    ['Windows backslashes stay', 'C:\\DCIM\\a.JPG', 'C:\\DCIM\\a.JPG'],
    ['ESC of a clear-screen and colour', '\u001b[2J\u001b[H\u001b[32mok', '\\e[2J\\e[H\\e[32mok'],
    ['OSC window title ending in BEL', '\u001b]0;pwned\u0007', '\\e]0;pwned\\x07'],
    ['OSC ending in ST (ESC \\)', '\u001b]2;t\u001b\\', '\\e]2;t\\e\\'],
    ['LF forging a line', 'a.JPG\nDone: 0 failed', 'a.JPG\\nDone: 0 failed'],
    ['CR overwriting a line', 'bad\rgood', 'bad\\rgood'],
    ['TAB and NUL', 'a\tb\u0000', 'a\\tb\\0'],
    ['other C0 and DEL', '\u0008\u007f', '\\x08\\x7F'],
    ['C1 CSI and NEL', '\u009b2J\u0085', '\\x9B2J\\x85'],
    ['right-to-left override', 'photo\u202egpj.exe', 'photo\\u202Egpj.exe'],
    [
      'every bidi embedding, override and isolate',
      '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069',
      '\\u202A\\u202B\\u202C\\u202D\\u202E\\u2066\\u2067\\u2068\\u2069',
    ],
    ['LRM, RLM and ALM', '\u200e\u200f\u061c', '\\u200E\\u200F\\u061C'],
    [
      'zero-width space, word joiner, BOM, soft hyphen',
      '\u200b\u2060\ufeff\u00ad',
      '\\u200B\\u2060\\uFEFF\\xAD',
    ],
    ['line and paragraph separators', 'a\u2028b\u2029c', 'a\\u2028b\\u2029c'],
    ['tag characters past the BMP', 'x\u{e0041}', 'x\\u{E0041}'],
    ['lone surrogates', 'a\ud800b\udc00', 'a\\uD800b\\uDC00'],
  ])('%s', (_what, input, shown) => {
    expect(visible(input)).toBe(shown);
  });

  it('shows numbers and other values as text', () => {
    expect(visible(42)).toBe('42');
    expect(visible(null)).toBe('null');
  });

  it('leaves nothing a terminal acts on', () => {
    let all = '';
    for (let cp = 0; cp < 0x3000; cp++) all += String.fromCodePoint(cp);
    const left = visible(all).match(
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069]/g,
    );
    expect(left).toBeNull();
  });
});

describe('safeJsonText: JSON lines a terminal shows as written', () => {
  it.each([
    ['C1 CSI', { m: 'a\u009bb' }],
    ['bidi override', { name: 'photo\u202egpj.exe' }],
    ['line separator', { m: 'a\u2028b' }],
    ['tag character', { m: 'x\u{e0041}' }],
    ['lone surrogate', { m: 'a\ud800' }],
    ['ESC (already escaped by JSON.stringify)', { m: '\u001b[2J' }],
  ])('%s: escaped, and the JSON still reads back the same', (_what, value) => {
    const text = safeJsonText(JSON.stringify(value));
    // eslint-disable-next-line no-control-regex
    expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\p{Cf}]|[\ud800-\udfff]/u);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('only what a terminal acts on changes, next to pairs, accents and plain ASCII', () => {
    // Raw text (JSON.stringify escapes lone surrogates itself): pairs kept whole, halves escaped.
    expect(safeJsonText('"🚁\ud800🚁\udc00é\u202e—"')).toBe('"🚁\\ud800🚁\\udc00é\\u202e—"');
    expect(safeJsonText('"x\u{e0041}\u0085 \u2028"')).toBe('"x\\udb40\\udc41\\u0085 \\u2028"');
    const plain = JSON.stringify({ files: Array.from({ length: 100 }, (_, i) => `DJI_${i}.JPG`) });
    expect(safeJsonText(plain)).toBe(plain);
  });
});
