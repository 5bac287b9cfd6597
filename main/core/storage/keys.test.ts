import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import { buildObjectKey, checkObjectKey, objectKeyOf, sanitizeSegment } from './keys.js';

const FP = '0CC175B9C0F1B6A831C399E269772661';
const fp = FP.toLowerCase();
const FP2 = '92eb5ffee6ae2fec3ad71c777531578f';
const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** The properties every key must have, whatever the input. */
function assertSafe(key: string, prefix = 'ws/media'): void {
  expect(key.startsWith(`${prefix}/`)).toBe(true);
  expect(key.startsWith('/')).toBe(false);
  expect(key).not.toContain('\\');
  expect(key).not.toContain('//');
  expect(key.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..')).toBe(true);
  // eslint-disable-next-line no-control-regex
  expect(key).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  expect(key.normalize('NFC')).toBe(key);
  expect(bytes(key)).toBeLessThanOrEqual(1024);
}

describe('buildObjectKey', () => {
  it('lays out <prefix>/[<flight>/]<md5>/<name>, stable and lowercase fingerprint', () => {
    expect(buildObjectKey({ prefix: 'ws/media', fingerprint: FP, name: 'DJI_0001.JPG' })).toBe(
      `ws/media/${fp}/DJI_0001.JPG`,
    );
    const withFlight = buildObjectKey({
      prefix: 'ws/media/',
      fingerprint: FP,
      relPath: 'DCIM/100MEDIA/DJI_0001.JPG',
      flightFolder: 'DJI_202401011200_001_Survey',
    });
    expect(withFlight).toBe(`ws/media/DJI_202401011200_001_Survey/${fp}/DJI_0001.JPG`);
    expect(
      buildObjectKey({
        prefix: 'ws/media/',
        fingerprint: FP,
        relPath: 'DCIM/100MEDIA/DJI_0001.JPG',
        flightFolder: 'DJI_202401011200_001_Survey',
      }),
    ).toBe(withFlight);
  });

  it('joins the prefix with exactly one slash; empty prefix allowed', () => {
    expect(buildObjectKey({ prefix: 'ws/media//', fingerprint: FP, name: 'a.jpg' })).toBe(
      `ws/media/${fp}/a.jpg`,
    );
    expect(buildObjectKey({ prefix: '/ws', fingerprint: FP, name: 'a.jpg' })).toBe(`ws/${fp}/a.jpg`);
    expect(buildObjectKey({ prefix: '', fingerprint: FP, name: 'a.jpg' })).toBe(`${fp}/a.jpg`);
  });

  it('different content with the same name never collides', () => {
    const a = buildObjectKey({ prefix: 'ws/media', fingerprint: FP, name: 'DJI_0001.JPG' });
    const b = buildObjectKey({ prefix: 'ws/media', fingerprint: FP2, name: 'DJI_0001.JPG' });
    expect(a).not.toBe(b);
  });

  it.each([
    ['../../etc/passwd', 'passwd'],
    ['/abs/path.jpg', 'path.jpg'],
    ['C:\\dir\\x.jpg', 'x.jpg'],
    ['..', '_'],
    ['a\u0000b\u001fc\u007f.jpg', 'a_b_c_.jpg'],
    ['evil\u202Egpj.exe', 'evil_gpj.exe'],
    ['  spaced .jpg  ', 'spaced .jpg'],
    ['', '_'],
  ])('hostile name %j → safe last segment %j', (name, last) => {
    const key = buildObjectKey({ prefix: 'ws/media', fingerprint: FP, relPath: name });
    assertSafe(key);
    expect(key.split('/').pop()).toBe(last);
  });

  it('a hostile flight folder stays one safe segment', () => {
    const key = buildObjectKey({
      prefix: 'ws/media',
      fingerprint: FP,
      name: 'a.jpg',
      flightFolder: '../../x\\y',
    });
    assertSafe(key);
    expect(key.split('/')).toHaveLength(5);
  });

  it('NFD and NFC forms of the same name give the same key', () => {
    const nfc = 'Café_Überflug.JPG'.normalize('NFC');
    const nfd = nfc.normalize('NFD');
    expect(nfd).not.toBe(nfc);
    expect(buildObjectKey({ prefix: 'ws/media', fingerprint: FP, name: nfd })).toBe(
      buildObjectKey({ prefix: 'ws/media', fingerprint: FP, name: nfc }),
    );
  });

  it('caps a 1000-character name at 200 bytes, keeping the extension', () => {
    const key = buildObjectKey({ prefix: 'ws/media', fingerprint: FP, name: `${'飞'.repeat(1000)}.MP4` });
    assertSafe(key);
    const last = key.split('/').pop()!;
    expect(bytes(last)).toBeLessThanOrEqual(200);
    expect(last.endsWith('.MP4')).toBe(true);
    expect(last).not.toContain('\ufffd');
  });

  it('stays within 1024 bytes under a long prefix', () => {
    const prefix = 'p'.repeat(900);
    const key = buildObjectKey({ prefix, fingerprint: FP, name: `${'x'.repeat(1000)}.jpg` });
    assertSafe(key, prefix);
    expect(bytes(key)).toBeLessThanOrEqual(1024);
    expect(() => buildObjectKey({ prefix: 'p'.repeat(1000), fingerprint: FP, name: 'a.jpg' })).toThrow(
      DmsError,
    );
  });

  it('refuses a missing fingerprint and an unsafe prefix', () => {
    expect(() => buildObjectKey({ prefix: 'ws', fingerprint: 'nope', name: 'a.jpg' })).toThrow(DmsError);
    expect(() => buildObjectKey({ prefix: 'ws/../other', fingerprint: FP, name: 'a.jpg' })).toThrow(DmsError);
    expect(() => buildObjectKey({ prefix: 'ws\\x', fingerprint: FP, name: 'a.jpg' })).toThrow(DmsError);
  });
});

describe('sanitizeSegment', () => {
  it('makes any string one safe segment', () => {
    expect(sanitizeSegment('a/b\\c')).toBe('a_b_c');
    expect(sanitizeSegment('...')).toBe('_');
    expect(sanitizeSegment('\ud800x')).toBe('_x'); // lone surrogate
    expect(bytes(sanitizeSegment('é'.repeat(300), 50))).toBeLessThanOrEqual(50);
  });
});

describe('objectKeyOf and checkObjectKey: one builder and one check for every object', () => {
  it('builds <prefix>/<segments> with each segment made safe, and every key it builds passes the check', () => {
    expect(objectKeyOf('ws/media/', ['manifests', 'card-1', 'report.json'])).toBe(
      'ws/media/manifests/card-1/report.json',
    );
    const hostile = objectKeyOf('ws', ['..', 'a/../../b', '\u001b[2J', '', 'x\\y']);
    expect(hostile).toBe('ws/_/a_.._.._b/__2J/_/x_y');
    for (const key of [
      hostile,
      buildObjectKey({ prefix: 'ws/media', fingerprint: FP, name: '../../x.jpg' }),
    ]) {
      assertSafe(key, key.startsWith('ws/media/') ? 'ws/media' : 'ws');
      expect(() => checkObjectKey(key.startsWith('ws/media/') ? 'ws/media' : 'ws', key)).not.toThrow();
    }
    expect(() => objectKeyOf('ws', [])).toThrow(DmsError);
    expect(() => objectKeyOf('p'.repeat(1000), ['x'.repeat(100)])).toThrow(DmsError);
  });

  it('refuses keys outside the prefix or climbing out of it, and an unusable prefix as a storage setting', () => {
    const refused = (prefix: string, key: string) => {
      try {
        checkObjectKey(prefix, key);
      } catch (err) {
        return (err as DmsError).message;
      }
      return 'accepted';
    };
    expect(refused('ws', 'ws/a/b.jpg')).toBe('accepted');
    expect(refused('ws/', 'ws/a/b.jpg')).toBe('accepted');
    expect(refused('', 'a/b.jpg')).toBe('accepted');
    for (const [prefix, key] of [
      ['ws', 'wsx/a.jpg'],
      ['ws', 'other/a.jpg'],
      ['ws', 'ws/../other/a.jpg'],
      ['ws', 'ws/a/./b.jpg'],
      ['ws', 'ws//a.jpg'],
      ['ws', 'ws/a.jpg/'],
      ['ws', 'ws/a\\..\\b.jpg'],
      ['ws', 'ws/a\r\nb.jpg'],
      ['', '/a.jpg'],
      ['', '../a.jpg'],
      ['ws', `ws/${'x'.repeat(1100)}`],
    ] as const) {
      expect([key, refused(prefix, key)]).toEqual([
        key,
        expect.stringMatching(/^Refused to write the object "/),
      ]);
    }
    expect(refused('../../etc', '../../etc/manifests/x.json')).toMatch(
      /^The server's storage settings are wrong: object_key_prefix "\.\.\/\.\.\/etc" climbs out/,
    );
  });
});
