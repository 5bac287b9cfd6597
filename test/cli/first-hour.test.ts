/**
 * The first hour of a new user (issue 21, sections 2 and 3), with the built
 * CLI as a crew member runs it: a clean HOME, no TTY, every line read. Each
 * test names the message that was wrong where it was shown.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, readOnlyFor, runCli, stateUnder, type CliRun } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';
import { refusingPort } from '../support/refusing-port.js';

/** The command as these tests run it: the CLI's hints name it so. */
const AS_RUN = `node ${path.relative(process.cwd(), BIN)}`;

const VERSION = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string }).version;

let dir: string;
let svc: RunningService;
let password: string;
let homes = 0;
/** A fresh HOME: nothing of this machine or of another test leaks in. */
const home = (): string => {
  const h = path.join(dir, `home-${++homes}`);
  fs.mkdirSync(h);
  return h;
};
const server = () => ['--server', svc.baseUrl, '--token', svc.token, '--workspace', svc.workspaceId];
/** Everything a person reads of a run. */
const said = (r: CliRun): string => r.out + r.err;

beforeAll(async () => {
  dir = tempDir('dms-first-hour-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
  password = fs.readFileSync(path.join(dir, 'svc', 'pilot-password'), 'utf8').trim();
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A loopback port that refuses every connection for the whole file. */
const closedPort = refusingPort;

/** A home whose default state folder synced one card (three photos) to the reference service. */
async function syncedHome(): Promise<{ home: string; card: string; state: string }> {
  const h = home();
  const card = makeCard(path.join(h, 'card'), 'DJI_202209021517_001_Waypoint1', [
    'M30T/M30T_IR.JPG',
    'M3T/M3T_IR.JPG',
    'ZH20T/DJI_H20T.jpg',
  ]);
  const r = await runCli(['sync', card, ...server()], { home: h });
  expect(r.code, said(r)).toBe(0);
  return { home: h, card, state: stateUnder(h) };
}

describe('every message true where it is shown', () => {
  it('login with a wrong password says so, not "no longer accepts your sign-in"', async () => {
    const r = await runCli(['login', '--server', svc.baseUrl, '--username', 'pilot'], {
      home: home(),
      input: 'wrong-password\n',
    });
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/did not accept this user name and password/);
    expect(said(r)).not.toMatch(/no longer accepts|nothing is lost/);
  });

  it('login to a closed port says nothing answers there, not "uploads continue by themselves"', async () => {
    const port = await closedPort();
    const r = await runCli(['login', '--server', `http://127.0.0.1:${port}`, '--username', 'pilot'], {
      home: home(),
      input: 'x\n',
    });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/Nothing answers at this address\. Check the server address and port/);
    expect(said(r)).not.toMatch(/upload|retried/i);
  });

  it('login to a port that does not speak HTTP says so, without parser jargon', async () => {
    const ssh = net.createServer((s) => s.end('SSH-2.0-OpenSSH_9.6\r\n'));
    await new Promise<void>((r) => ssh.listen(0, '127.0.0.1', r));
    try {
      const { port } = ssh.address() as net.AddressInfo;
      const r = await runCli(['login', '--server', `http://127.0.0.1:${port}`, '--username', 'pilot'], {
        home: home(),
        input: 'x\n',
      });
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/answered at this address, but not like a Drone Media Sync server/);
      expect(said(r)).not.toMatch(/Expected HTTP|RTSP|ICE|upload/);
    } finally {
      ssh.close();
    }
  });

  it('a wrong --workspace (HTTP 403) names the workspace instead of a lost sign-in', async () => {
    const r = await runCli(
      ['waylines', '--server', svc.baseUrl, '--token', svc.token, '--workspace', 'not-my-workspace'],
      { home: home() },
    );
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/does not let this sign-in into workspace not-my-workspace \(HTTP 403 Forbidden\)/);
    expect(r.err).toMatch(/Check the workspace id/);
    expect(said(r)).not.toMatch(/no longer accepts/);
  });

  it('waylines --page-size 200: the refusal of a listing, not of "this file" with a Retry button', async () => {
    const r = await runCli(['waylines', '--page-size', '200', ...server()], { home: home() });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^drone-media-sync: The server refused to list the waylines: page_size must be [^\n]*\d+"\)\.$/m,
    );
    expect(said(r)).not.toMatch(/this file|Retry|\.\./);
  });

  it('retry of a path the queue does not know says so (exit 1), not "was the card removed?"', async () => {
    const { home: h, card } = await syncedHome();
    const r = await runCli(['retry', path.join(card, 'DCIM', 'no-such.JPG')], { home: h });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/no-such\.JPG: no failed file there, nothing to retry/);
    expect(said(r)).not.toMatch(/card removed|will be retried/);
  });

  it('report of a folder nothing was synced from: refused by name, and no manifest folder is made', async () => {
    const { home: h, state, card } = await syncedHome();
    const before = fs.readdirSync(path.join(state, 'manifests'));
    const r = await runCli(['report', '/typo/path'], { home: h });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/\/typo\/path does not exist, and nothing was synced from it/);
    expect(r.err).toContain(`Synced before: ${card}`);
    expect(said(r)).not.toMatch(/insert it again|safe to format/);
    expect(fs.readdirSync(path.join(state, 'manifests'))).toEqual(before);
  });

  it('the report: the workspace once, counts in words, devices by name, its path and its hash list', async () => {
    const { home: h, card } = await syncedHome();
    const r = await runCli(['report', card], { home: h });
    expect(r.code, said(r)).toBe(0);
    const reportPath = /^ {2}Report: (.+report\.html)$/m.exec(r.out)?.[1];
    expect(reportPath, r.out).toBeDefined();
    const html = fs.readFileSync(reportPath!, 'utf8');
    expect(html).toContain(`· workspace ${svc.workspaceId} on ${svc.baseUrl}`);
    expect(html).not.toMatch(/workspace workspace/);
    expect(html).toContain('3 files (3 media, 0 RTK)');
    // Devices by DJI's names, never the keys.
    expect(html).toContain('Matrice 30T');
    expect(html).toContain('Mavic 3 Thermal');
    expect(html).toContain('Matrice 300 RTK with Zenmuse H20T');
    expect(html).not.toMatch(/0-67-1|0-77-1|1-43-0/);
    const json = JSON.parse((await runCli(['report', card, '--json'], { home: h })).out);
    expect(json.hashList).toMatch(/^ascmhl\/0001_card_.*\.mhl$/);
    expect(fs.existsSync(path.join(path.dirname(reportPath!), json.hashList))).toBe(true);
    expect(json.tool.version).toBe(VERSION);
  });

  it('report --min-height (README): the photos below it named, the advisory line, the card still safe', async () => {
    const { home: h, card } = await syncedHome();
    const plain = await runCli(['report', card], { home: h });
    expect(plain.code, said(plain)).toBe(0);
    expect(plain.out).not.toMatch(/look before you leave|probably unusable/);
    const r = await runCli(['report', card, '--min-height', '20'], { home: h });
    expect(r.code, said(r)).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^card: 3 files verified in workspace .* — safe to format$/);
    expect(lines[1]).toBe(
      '  Flight DJI_202209021517_001_Waypoint1: 2 of 3 photos look unusable (flown too low?), first at 10:33:46 — look before you leave',
    );
    expect(r.out).toContain(
      '2 photos probably unusable (flown too low?): DJI_H20T.jpg: taken at 16.5 m above take-off, below the 20 m set · M3T_IR.JPG: taken at 10.4 m above take-off, below the 20 m set.',
    );
    const bad = await runCli(['report', card, '--min-height', 'high'], { home: h });
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/the height must be a number of metres from 0 to 1000, e\.g\. 50/);
  });

  it('a folder mixing cameras, continents and years: split into its flights, and flagged', async () => {
    const h = home();
    const card = makeCard(path.join(h, 'mixed'), 'Everything', [
      'M30T/M30T_IR.JPG',
      'M3T/M3T_IR.JPG',
      'ZH20T/DJI_H20T.jpg',
      'ZH20T/DJI_20220902151742_0028_T.JPG',
    ]);
    fs.writeFileSync(
      path.join(card, 'DCIM', 'Everything', 'DJI_20240101120000_0001_W.MP4'),
      'not a real video',
    );
    const r = await runCli(['sync', card, ...server()], { home: h });
    expect(r.code, said(r)).toBe(0);
    // Issue 32: one flight per battery (here per year and continent), in the order they were flown.
    expect(r.out.match(/Everything, flight \d of 5: [^\n]*/g)).toEqual([
      'Everything, flight 1 of 5: 10:33:46 UTC, 17 m above take-off, 1 photo',
      'Everything, flight 2 of 5: 15:17:42 UTC, 39 m above take-off, 1 photo',
      'Everything, flight 3 of 5: 07:39:34 UTC, 10 m above take-off, 1 photo',
      'Everything, flight 4 of 5: 12:00:00 UTC, 0 photos, 1 video',
      'Everything, flight 5 of 5: 12:46:12 UTC, 29 m above take-off, 1 photo',
    ]);
    expect(r.out).toMatch(
      /taken over 3 years \(2021-05-28 to 2024-04-24\) and up to [\d,]+ km apart: this folder holds more than one flight/,
    );
    const html = fs.readFileSync(/Report: (.+)$/m.exec(r.out)![1]!, 'utf8');
    expect(html).toContain('<tr><th>Usual interval</th><td>—</td></tr>');
    expect(html.match(/<section class="flight">/g)).toHaveLength(5);
    expect(html).toContain('shown one by one (5 flights)');
    expect(html).not.toMatch(/nothing to note/);
  });

  it('waylines: a table with headings, aircraft and types by name, the star explained; models by name', async () => {
    const h = home();
    const r = await runCli(['waylines', '--page-size', '30', ...server()], { home: h });
    expect(r.code, said(r)).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Waylines 1-\d+ of \d+ on http:\/\/127\.0\.0\.1:\d+ \(\* = favorite\):$/);
    expect(lines[1]).toMatch(/^ {3}Name +Aircraft +Type +Updated \(UTC\) +Start \(lat, lng\)$/);
    expect(r.out).toMatch(/Matrice 30 +Waypoint/);
    expect(r.out).not.toMatch(/\b0-\d+-\d+\b|types \d/);
    const byName = await runCli(['waylines', '--drone-model', 'M30', ...server()], { home: h });
    const byKey = await runCli(['waylines', '--drone-model', '0-67-0', ...server()], { home: h });
    expect(byName.code, said(byName)).toBe(0);
    expect(byName.out).toBe(byKey.out);
    expect(byName.out).toMatch(/^Waylines 1-[1-9]/);
    const unknown = await runCli(['waylines', '--drone-model', 'Z9', ...server()], { home: h });
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/--drone-model Z9: no such model\. .*M30, M30T/);
  });

  // The machine's own Node (Debian's) is older than 24: the check must run before anything is loaded.
  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((n) => {
    const v = spawnSync(n, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout?.trim();
    return v !== undefined && v !== '' && Number(v.split('.')[0]) < 24;
  });
  it.skipIf(oldNode === undefined)(
    'under an older Node, says which Node is needed, without a stack trace',
    async () => {
      for (const args of [['status'], ['waylines', ...server()], ['--version']]) {
        const r = await runCli(args, { home: home(), node: oldNode! });
        expect(r.code).toBe(1);
        expect(r.err).toMatch(
          /^drone-media-sync needs Node\.js 24 or newer; this is Node\.js \d+\.\d+\.\d+ \(/,
        );
        expect(said(r)).not.toMatch(/^\s+at |TypeError|server had a problem/m);
      }
    },
  );

  it('a state folder this user cannot write: status and report read it; writers say no permission', async () => {
    const { home: h, state, card } = await syncedHome();
    const ro = readOnlyFor(state);
    try {
      const status = await runCli(['status'], { home: h, wrap: ro.wrap });
      expect(status.code, said(status)).toBe(0);
      expect(status.out).toMatch(/3 {2}done/);
      expect(status.out).toMatch(/which this user cannot write/);
      const report = await runCli(['report', card], { home: h, wrap: ro.wrap });
      expect(report.code, said(report)).toBe(0);
      expect(report.out).toMatch(/safe to format/);
      for (const args of [
        ['sync', card, ...server()],
        ['retry', '--all'],
        ['login', '--server', svc.baseUrl, '--username', 'pilot'],
        ['report', card, '--accept-flight', 'DJI_202209021517_001_Waypoint1'],
        ['waylines'], // no server set: the built-in local service keeps its data in the state folder
      ]) {
        const r = await runCli(args, { home: h, wrap: ro.wrap, input: `${password}\n` });
        expect(r.code, `${args[0]}: ${said(r)}`).toBe(2);
        expect(r.err, args[0]).toMatch(
          new RegExp(`^drone-media-sync: No permission to write ${state}(/local-service)?: `),
        );
        expect(said(r), args[0]).not.toMatch(/SQLITE|readonly database|unable to open/i);
      }
    } finally {
      ro.restore();
    }
  });
});

describe('what every tool has', () => {
  it('--version and -V print the one version (package.json), as the report does', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag], { home: home() });
      expect(r.code).toBe(0);
      expect(r.out).toBe(`${VERSION}\n`);
    }
  });

  it('logout deletes the stored sign-in; the next command says it is not signed in', async () => {
    const h = home();
    const login = await runCli(['login', '--server', svc.baseUrl, '--username', 'pilot'], {
      home: h,
      input: `${password}\n`,
    });
    expect(login.code, said(login)).toBe(0);
    const out = await runCli(['logout'], { home: h });
    expect(out.code, said(out)).toBe(0);
    expect(out.out).toBe(
      `Signed out of ${svc.baseUrl}: the stored sign-in is deleted. To sign in again: ${AS_RUN} login --server ${svc.baseUrl} --username <name>\n`,
    );
    expect(fs.existsSync(path.join(stateUnder(h), 'token'))).toBe(false);
    const after = await runCli(['waylines'], { home: h });
    expect(after.code).toBe(3);
    // The hint names the command as it was run (here `node dist/main/cli/bin.js`; in a checkout's shell `npx drone-media-sync`).
    expect(after.err).toMatch(/^drone-media-sync: Not signed in to http:.* Run: (.*) login/);
    expect(/ Run: (.*) login/.exec(after.err)?.[1]).toBe(AS_RUN);
    const again = await runCli(['logout'], { home: h });
    expect(again.out).toMatch(/^Not signed in: there is no stored sign-in to delete\.\n$/);
  });

  it('with no workspace set, the hint to sign in names the command as it was run', async () => {
    // A fresh checkout has no `drone-media-sync` on PATH: the hint must be runnable as printed.
    const r = await runCli(['sync', tempDir('no-ws-card'), '--server', svc.baseUrl], { home: home() });
    expect(r.code, said(r)).toBe(2);
    expect(r.err).toContain('No workspace is set.');
    expect(r.err).toContain(`sign in with \`${AS_RUN} login\``);
  });

  it('logs and reset are written down where the README can link them', () => {
    const doc = fs.readFileSync('docs/logs-and-reset.md', 'utf8');
    for (const words of [
      'Open log folder',
      '--verbose',
      'DMS_LOG_LEVEL',
      'drone-media-sync logout',
      'queue.db',
    ]) {
      expect(doc).toContain(words);
    }
  });
});

describe('serve across restarts', () => {
  /** Starts `serve`; resolves with its ready line and the person's line, or its exit. */
  function serve(args: string[], h: string) {
    const child = spawn(process.execPath, [path.resolve('dist/main/cli/bin.js'), 'serve', ...args], {
      env: { ...process.env, HOME: h, DMS_STATE_DIR: '' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    const ready = new Promise<{ ready?: { base_url: string }; err: string; code?: number | null }>(
      (resolve) => {
        child.stdout.on('data', () => {
          if (out.includes('\n')) resolve({ ready: JSON.parse(out.split('\n')[0]!), err });
        });
        child.on('exit', (code) => resolve({ err, code }));
      },
    );
    const stop = async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGTERM');
      await exited;
    };
    return { ready, stop, errText: () => err };
  }

  it('keeps its port, says where the password is on every start, and a saved sign-in still works', async () => {
    const h = home();
    const first = serve([], h);
    const one = await first.ready;
    expect(one.ready, one.err).toBeDefined();
    const url = one.ready!.base_url;
    const passwordFile = path.join(stateUnder(h), 'local-service', 'pilot-password');
    const line = `Sign in with: ${AS_RUN} login --server ${url} --username pilot (the password is in ${passwordFile})`;
    expect(first.errText()).toContain(line);
    const login = await runCli(
      ['login', '--server', url, '--username', 'pilot', '--state', path.join(h, 'agent')],
      {
        home: h,
        input: `${fs.readFileSync(passwordFile, 'utf8').trim()}\n`,
      },
    );
    expect(login.code, said(login)).toBe(0);
    const portsFile = path.join(stateUnder(h), 'local-service', 'ports.json');
    const ports = JSON.parse(fs.readFileSync(portsFile, 'utf8')) as { api: number; bucket: number };
    expect(ports.api).toBe(Number(new URL(url).port));
    await first.stop();

    const second = serve([], h);
    const two = await second.ready;
    try {
      expect(two.ready?.base_url, two.err).toBe(url);
      // The bucket too: upload credentials issued before the restart name its address.
      expect(JSON.parse(fs.readFileSync(portsFile, 'utf8'))).toEqual(ports);
      expect(second.errText()).toContain(line);
      // The sign-in saved before the restart works as it is.
      const w = await runCli(['waylines', '--state', path.join(h, 'agent')], { home: h });
      expect(w.code, said(w)).toBe(0);
      expect(w.out).toMatch(new RegExp(`^Waylines 1-\\d+ of \\d+ on ${url.replace(/\./g, '\\.')}`));
      // Its port taken (the service still runs): refused in words, not moved elsewhere in silence.
      const third = serve([], h);
      const three = await third.ready;
      expect(three.ready).toBeUndefined();
      expect(three.code).toBe(2);
      expect(three.err).toMatch(/port \d+.*is in use by another program .*--port 0/);
    } finally {
      await second.stop();
    }
  });
});
