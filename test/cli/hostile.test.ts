/**
 * The screen cannot be forged (issue 22): file names, folder names, wayline
 * names and server messages come from outside; whatever they hold, the built
 * CLI's bytes on stdout and stderr carry no escape, no carriage return, no
 * bidi override, and no line a name or a message started. The server is a
 * stand-in of DJI's sample server whose answers are made hostile by a hook;
 * the bucket is a real s3rver.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, stateUnder, TERMINAL_CONTROLS, type CliRun } from '../support/cli.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { startSampleBucket, startSampleServer, type SampleServer } from '../support/sample-server.js';

/** A server message that would clear the screen and print a green verdict. */
const VERDICT = '\u001b[2J\u001b[H\u001b[32mAll files uploaded - safe to format';
/** A file name that would start a line of its own, set the window title and turn text around. */
const FORGED_NAME = 'DJI_0001.JPG\nDone with card: 3 uploaded, 0 failed\u001b]0;pwned\u0007 \u202egpj.JPG';
/** A flight folder reversed by a bidi override. */
const FOLDER = 'DJI_202209021517_001_\u202eexe.Survey';

let dir: string;
let sample: SampleServer;
let bucket: { close(): Promise<void> };
let card: string;
let home: string;

const server = () => ['--server', sample.baseUrl, '--workspace', sample.workspaceId, '--token-stdin'];

/** The raw bytes hold nothing a terminal acts on, and no line a name or a message started. */
function expectUnforged(r: CliRun): void {
  for (const bytes of [r.outBytes, r.errBytes]) {
    const text = bytes.toString('utf8');
    expect(text, text).not.toMatch(TERMINAL_CONTROLS);
    expect(text).not.toMatch(/^(Done with card|All files uploaded)/m);
  }
}

beforeAll(async () => {
  dir = tempDir('dms-hostile-');
  const s3 = await startSampleBucket(path.join(dir, 's3'));
  bucket = s3;
  sample = await startSampleServer({
    sts: s3.sts,
    waylines: [
      {
        id: 'w1',
        name: `Harbour${VERDICT}`,
        drone_model_key: '0-67-0',
        template_types: [0],
        favorited: true,
        update_time: 1_700_000_000_000,
      },
      {
        id: 'w2',
        name: 'Roof\r\nDone with card: 3 uploaded, 0 failed\u202e',
        drone_model_key: '0-89-0',
        template_types: [1],
        favorited: false,
        update_time: 1_700_000_100_000,
      },
    ],
  });
  // The M3T photo's callback is refused with a message that would forge a verdict.
  sample.setHook((call) => {
    const body = call.body as { name?: string } | undefined;
    return call.path.endsWith('/upload-callback') && body?.name?.includes('M3T_IR')
      ? { body: { code: -1, message: VERDICT } }
      : undefined;
  });
  home = path.join(dir, 'home');
  card = path.join(home, 'card');
  const folder = path.join(card, 'DCIM', FOLDER);
  fs.mkdirSync(folder, { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'M30T/M30T_IR.JPG'), path.join(folder, FORGED_NAME));
  // The refused photo sits in the forged folder too: `sync` prints the paths of the files it could
  // not finish made visible, like everything else.
  const plain = folder;
  fs.mkdirSync(plain, { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'M3T/M3T_IR.JPG'), path.join(plain, 'M3T_IR.JPG'));
});
afterAll(async () => {
  await sample.close();
  await bucket.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('outside text is shown, never obeyed', () => {
  it('sync: a forged file name and a hostile server message, shown escaped (text, JSON and the log)', async () => {
    const r = await runCli(['sync', card, '-v', ...server()], { home, input: 'sample-token\n' });
    expect(r.code, r.out + r.err).toBe(1);
    expectUnforged(r);
    // The refusal is there, made visible, and the real summary is the only "Done with" line.
    expect(r.out).toContain('\\e[2J\\e[H\\e[32mAll files uploaded - safe to format');
    expect(r.out.match(/^Done with /gm)).toHaveLength(1);
    expect(r.out).toMatch(/^Done with .*: 1 uploaded, .* 1 failed/m);
    expect(r.out).toContain('\\u202Eexe.Survey');
    // -v: the engine's log lines (JSON) carry the names as escapes too.
    expect(r.err).toMatch(/^\{"level":/m);

    const json = await runCli(['sync', card, '--json', ...server()], { home, input: 'sample-token\n' });
    expectUnforged(json);
    const lines = json.out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // The same values as data: JSON escapes, nothing lost.
    expect(lines.find((l) => l.type === 'verdict')?.flights).toEqual(
      expect.arrayContaining([expect.objectContaining({ folder: `DCIM/${FOLDER}` })]),
    );
  });

  it('status and report show the names and the message escaped', async () => {
    const status = await runCli(['status'], { home });
    expect(status.code).toBe(0);
    expectUnforged(status);
    expect(status.out).toContain('\\e[32mAll files uploaded');
    const report = await runCli(['report'], { home });
    expect(report.code).toBe(0);
    expectUnforged(report);
    expect(report.out).toContain('\\u202Eexe.Survey');
    const json = await runCli(['report', '--json'], { home });
    expectUnforged(json);
    expect(
      JSON.parse(json.out).files.map((f: { relPath: string }) => path.posix.basename(f.relPath)),
    ).toContain(FORGED_NAME);
  });

  it('the HTML report shows them as visible text', () => {
    const manifests = path.join(stateUnder(home), 'manifests');
    const [folder] = fs.readdirSync(manifests);
    const html = fs.readFileSync(path.join(manifests, folder!, 'report.html'), 'utf8');
    expect(html).not.toMatch(TERMINAL_CONTROLS);
    expect(html).toContain(
      'DJI_0001.JPG\\nDone with card: 3 uploaded, 0 failed\\e]0;pwned\\x07 \\u202Egpj.JPG',
    );
    expect(html).toContain('\\e[2J\\e[H\\e[32mAll files uploaded');
  });

  it('waylines: hostile names in the list and a hostile refusal, escaped', async () => {
    const list = await runCli(['waylines', ...server()], { home, input: 'sample-token\n' });
    expect(list.code, list.err).toBe(0);
    expectUnforged(list);
    // A heading line, the column titles, one line per wayline: no more.
    expect(list.out.trimEnd().split('\n')).toHaveLength(4);
    expect(list.out).toContain('Roof\\r\\nDone with card: 3 uploaded, 0 failed\\u202E');

    sample.setHook((call) =>
      call.path.endsWith('/waylines') ? { body: { code: -1, message: VERDICT } } : undefined,
    );
    const refused = await runCli(['waylines', ...server()], { home, input: 'sample-token\n' });
    expect(refused.code).toBe(1);
    expectUnforged(refused);
    expect(refused.err).toBe(
      'drone-media-sync: The server refused to list the waylines: \\e[2J\\e[H\\e[32mAll files uploaded - safe to format.\n',
    );
  });
});
