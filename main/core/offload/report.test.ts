import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/harness.js';
import { HOSTILE_NAMES, offloadFixture } from '../../../test/support/offload-fixture.js';
import { escapeHtml, renderReportHtml, reportJson } from './report.js';
import type { OffloadReportInput } from './types.js';

const dirs: string[] = [];
let input: OffloadReportInput;
beforeAll(async () => {
  const root = tempDir('dms-report-');
  dirs.push(root);
  input = await offloadFixture(root, { hostile: true, missing: [7], float: [3, 4], single: [11] });
});
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('reportJson', () => {
  it('carries the verdict, every file and one point per located exposure with its state', () => {
    const r = reportJson(input, 'ascmhl/0001_M3T_CARD_2024-05-06_090500Z.mhl');
    expect(r.format).toBe('drone-media-sync/offload-report');
    expect(r.version).toBe(1);
    expect(r.files).toHaveLength(input.files.length);
    expect(r.verdict.safe).toBe(false);
    const f = r.flights[0]!;
    expect(f).not.toHaveProperty('exposures');
    expect(f.missingIndexes).toEqual([7]);
    expect(f.points).toHaveLength(12);
    const byIndex = new Map(f.points.map((p) => [p.index, p]));
    expect(byIndex.get(7)).toMatchObject({ state: 'missing', files: [] });
    expect(byIndex.get(3)!.state).toBe('rtk-float');
    expect(byIndex.get(11)!.state).toBe('rtk-single');
    expect(byIndex.get(1)).toMatchObject({
      state: 'done',
      gimbalYaw: 90,
      files: ['DJI_20240506101512_0001_V.JPG'],
    });
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it('shows a failed or pending photo in its point', async () => {
    const root = tempDir('dms-report-');
    dirs.push(root);
    const folder = 'DCIM/DJI_202405061015_001_Quarry-North';
    const withStates = await offloadFixture(root, {
      states: {
        [`${folder}/DJI_20240506101512_0001_V.JPG`]: 'failed',
        [`${folder}/DJI_20240506101514_0002_V.JPG`]: 'waiting',
      },
    });
    withStates.files[0] = { ...withStates.files[0]!, error: 'The server refused this file.' };
    const points = reportJson(withStates).flights[0]!.points;
    expect(points[0]).toMatchObject({
      state: 'failed',
      problem: 'Upload failed for DJI_20240506101512_0001_V.JPG: The server refused this file.',
    });
    expect(points[1]).toMatchObject({
      state: 'on-its-way',
      problem: 'Waiting for the card: insert it again.',
    });
  });
});

describe('renderReportHtml', () => {
  it('escapes every hostile name: they show as text, never as markup', () => {
    const html = renderReportHtml(reportJson(input));
    expect(html).not.toContain('<img');
    expect(html).not.toContain('onerror=alert(1)>');
    expect(html).toContain(escapeHtml(HOSTILE_NAMES[0]));
    expect(html).toContain('a&amp;b &quot;quoted&quot; &#39;single&#39; ]]&gt; &lt;!-- x.JPG');
    // only our own tags: no element names that came from a file name
    const tags = new Set([...html.matchAll(/<([a-z][a-z0-9]*)/g)].map((m) => m[1]));
    expect([...tags].sort()).toEqual(
      [
        'body',
        'circle',
        'div',
        'figcaption',
        'figure',
        'footer',
        'g',
        'h1',
        'h2',
        'h3',
        'head',
        'html',
        'li',
        'line',
        'meta',
        'p',
        'path',
        'rect',
        'section',
        'span',
        'strong',
        'style',
        'svg',
        'table',
        'tbody',
        'td',
        'text',
        'th',
        'thead',
        'title',
        'tr',
        'ul',
      ].sort(),
    );
  });

  it('loads nothing: no script, no external reference, a strict policy of its own', () => {
    const html = renderReportHtml(reportJson(input));
    expect(html).not.toMatch(/<script|<link|<iframe|<img|<object|\ssrc="|\shref="|url\(|@import/i);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`);
  });

  it('puts the verdict first and a map with scale and north per flight', () => {
    const html = renderReportHtml(reportJson(input));
    expect(html.indexOf('Not safe to format yet')).toBeLessThan(html.indexOf('<section class="flight">'));
    expect(html).toContain('M3T_CARD: not safe to format yet — 1 flight incomplete');
    expect(html).toMatch(/<g class="scale">.*<text[^>]*>\d+ m<\/text>/);
    expect(html).toContain('<g class="north"');
    expect((html.match(/<g class="point"/g) ?? []).length).toBe(12);
  });
});
