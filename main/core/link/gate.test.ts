import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LinkGate, USAGE_FLUSH_MS, type NetworkFacts } from './gate.js';
import { LinkStore, periodKey } from './store.js';

const MiB = 1024 * 1024;
let dirs: string[] = [];
function storeFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-link-'));
  dirs.push(dir);
  return path.join(dir, 'link.db');
}
afterEach(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  dirs = [];
});

const home: NetworkFacts = { key: 'wifi:office|aa:bb', label: 'office', cost: 'unmetered' };
const hotspot: NetworkFacts = { key: 'wlan0|192.168.43.1|02:11', label: 'phone hotspot', cost: 'metered' };

describe('the link gate (a real SQLite file)', () => {
  it('metered: the first lane goes, the rest waits and the crew is asked once; the answer lasts for that network across a restart', () => {
    const file = storeFile();
    const store = new LinkStore(file);
    const gate = new LinkGate(store, {
      waiting: () => ({ lanes: ['photos', 'videos'], bytes: 41 * 1024 ** 3 }),
    });
    const questions: string[] = [];
    gate.on('question', (q) => questions.push(q.text));
    let changes = 0;
    gate.subscribe(() => changes++);

    gate.see(home);
    expect(gate.mayStart('videos', 8 * MiB)).toBe(true);
    gate.see(hotspot);
    expect(gate.mayStart('first', MiB)).toBe(true);
    expect(gate.mayStart('photos', 8 * MiB)).toBe(false);
    expect(gate.mayStart('videos', 8 * MiB)).toBe(false);
    expect(gate.mayStart('videos', 8 * MiB)).toBe(false);
    expect(questions).toEqual(['Upload 41.0 GB of photos and videos over this metered network?']);

    gate.answer('yes');
    expect(changes).toBeGreaterThanOrEqual(2);
    expect(gate.mayStart('videos', 8 * MiB)).toBe(true);
    // Back home, then on the hotspot again: no question, every lane.
    gate.see(home);
    gate.see(hotspot);
    expect(gate.mayStart('videos', 8 * MiB)).toBe(true);
    store.close();

    // A restart: the answer is in the file.
    const again = new LinkStore(file);
    const gate2 = new LinkGate(again);
    gate2.on('question', (q) => questions.push(q.text));
    gate2.see(hotspot);
    expect(gate2.mayStart('videos', 8 * MiB)).toBe(true);
    expect(questions).toHaveLength(1);
    again.close();
  });

  it('roaming or over its data limit: nothing goes, not even the first lane, until the crew says yes', () => {
    const store = new LinkStore(storeFile());
    const gate = new LinkGate(store);
    const questions: string[] = [];
    gate.on('question', (q) => questions.push(q.text));
    gate.see({ ...hotspot, cost: 'roaming' });
    expect(gate.mayStart('first', MiB)).toBe(false);
    expect(gate.mayStart('photos', MiB)).toBe(false);
    expect(questions).toEqual(['Upload the RTK files and logs waiting while roaming?']);
    gate.see({ ...hotspot, key: 'other', cost: 'over-limit' });
    expect(gate.mayStart('first', MiB)).toBe(false);
    expect(questions[1]).toBe(
      'Upload the RTK files and logs waiting over this network, which is over its data limit?',
    );
    gate.answer('no');
    expect(gate.mayStart('first', MiB)).toBe(false);
    gate.answer('yes');
    expect(gate.mayStart('first', MiB)).toBe(true);
    store.close();
  });

  it('flagged frames (issue 32) go over an unmetered network only: never asked about, held after a yes', () => {
    const store = new LinkStore(storeFile());
    const gate = new LinkGate(store);
    const questions: string[] = [];
    gate.on('question', (q) => questions.push(q.text));
    gate.see(hotspot);
    expect(gate.mayStart('flagged', MiB)).toBe(false);
    expect(questions).toEqual([]); // no yes lets them through: nothing to ask
    gate.answer('yes');
    expect(gate.mayStart('photos', MiB)).toBe(true);
    expect(gate.mayStart('flagged', MiB)).toBe(false);
    for (const cost of ['roaming', 'over-limit', 'ask'] as const) {
      gate.see({ ...hotspot, key: cost, cost });
      gate.answer('yes');
      expect(gate.mayStart('flagged', MiB)).toBe(false);
    }
    gate.see({ ...hotspot, key: 'office', cost: 'unmetered' });
    expect(gate.mayStart('flagged', MiB)).toBe(true);
    store.close();
  });

  it('an answer given by another process (the CLI) lets the parts through at the next look', () => {
    const file = storeFile();
    const store = new LinkStore(file);
    const gate = new LinkGate(store);
    gate.see(hotspot);
    expect(gate.mayStart('photos', MiB)).toBe(false);
    const cli = new LinkStore(file);
    cli.setAnswer(hotspot.key, 'yes');
    cli.close();
    expect(gate.mayStart('photos', MiB)).toBe(true);
    store.close();
  });

  it('a budget per day: kept across a restart, overshot by less than one part, renewed the next day', () => {
    const file = storeFile();
    let now = new Date(2026, 10, 27, 10, 0).getTime();
    const budget = { bytes: 20 * MiB, per: 'day' as const };
    const store = new LinkStore(file);
    const gate = new LinkGate(store, { now: () => now });
    gate.see({ ...home, budget });
    let sent = 0;
    // Three parts in flight at once, as the engine runs them.
    const inFlight: number[] = [];
    for (let i = 0; i < 3; i++) if (gate.mayStart('videos', 8 * MiB)) inFlight.push(8 * MiB);
    expect(inFlight).toHaveLength(3); // 0, 8, 16 MiB held: all below 20
    expect(gate.mayStart('videos', 8 * MiB)).toBe(false);
    for (const b of inFlight) {
      gate.sent('videos', b);
      sent += b;
    }
    expect(sent - budget.bytes).toBeLessThan(8 * MiB);
    expect(gate.state.name).toBe('spent');
    expect(gate.snapshot().budget).toMatchObject({ used: 24 * MiB, left: 0 });
    gate.close(); // the agent stops (link controller): the count that waited is written
    store.close();

    const store2 = new LinkStore(file);
    const gate2 = new LinkGate(store2, { now: () => now });
    gate2.see({ ...home, budget });
    expect(gate2.state.name).toBe('spent');
    expect(gate2.mayStart('first', MiB)).toBe(false);
    now += 24 * 3600_000; // the next day
    expect(gate2.mayStart('first', MiB)).toBe(true);
    expect(gate2.state.name).toBe('open');
    gate2.sent('first', MiB);
    expect(gate2.snapshot().budget).toMatchObject({ used: MiB, left: 19 * MiB });
    store2.close();
  });

  it('a part let through and never reported stops holding the budget after a while', () => {
    let now = 0;
    const store = new LinkStore(storeFile());
    const gate = new LinkGate(store, { now: () => now });
    gate.see({ ...home, budget: { bytes: 10 * MiB, per: 'month' } });
    expect(gate.mayStart('videos', 10 * MiB)).toBe(true);
    expect(gate.mayStart('videos', MiB)).toBe(false);
    now += 11 * 60_000;
    expect(gate.mayStart('videos', MiB)).toBe(true);
    store.close();
  });
});

describe('the budget count of a part sent', () => {
  it('is one commit of link.db per USAGE_FLUSH_MS, not one per part (a small file is a part), and all of it at close', () => {
    const file = storeFile();
    let now = new Date(2026, 10, 27, 10, 0).getTime();
    const store = new LinkStore(file);
    const gate = new LinkGate(store, { now: () => now });
    gate.see({ ...home, budget: { bytes: 100 * MiB, per: 'month' } });
    gate.sent('photos', MiB);
    // Each commit appends a frame (24-byte header + one page) for the page it changed.
    const pageSize = 4096;
    const walBytes = () => fs.statSync(`${file}-wal`).size;
    const commits = (from: number) => (walBytes() - from) / (24 + pageSize);
    const before = walBytes();
    // 100 small files in under a second: the budget counts them at once, link.db waits.
    for (let i = 0; i < 100; i++) {
      now += 5;
      gate.sent('photos', 64 * 1024);
    }
    expect(commits(before)).toBe(0); // before: 100
    expect(gate.snapshot().budget?.used).toBe(MiB + 100 * 64 * 1024);
    now += USAGE_FLUSH_MS;
    gate.sent('photos', 64 * 1024);
    expect(commits(before)).toBe(1); // day and month, one transaction
    gate.sent('photos', 64 * 1024);
    gate.close(); // the agent stops: what waits is written
    expect(commits(before)).toBe(2);
    expect(store.used(home.key, periodKey('month', new Date(now)))).toBe(MiB + 102 * 64 * 1024);
    expect(store.used(home.key, periodKey('day', new Date(now)))).toBe(MiB + 102 * 64 * 1024);
    store.close();
  });

  it('what waits is written within USAGE_FLUSH_MS when no other part comes (watch mode idles for hours)', async () => {
    const file = storeFile();
    const store = new LinkStore(file);
    const gate = new LinkGate(store);
    gate.see(home);
    gate.sent('photos', MiB);
    gate.sent('photos', 64 * 1024);
    const other = new LinkStore(file);
    const month = periodKey('month', new Date());
    expect(other.used(home.key, month)).toBe(MiB);
    await new Promise((resolve) => setTimeout(resolve, USAGE_FLUSH_MS + 200));
    expect(other.used(home.key, month)).toBe(MiB + 64 * 1024);
    other.close();
    gate.close();
    store.close();
  });
});

describe('link.db that cannot be written', () => {
  it('the link works from memory for the run and says why it keeps nothing (a real SQLite error, not a mock)', () => {
    // A folder where the file should be: SQLite cannot open it (SQLITE_CANTOPEN), as with a full or read-only disk.
    const file = storeFile();
    fs.mkdirSync(file);
    const store = new LinkStore(file);
    expect(store.notKept).toMatch(/cannot be written \(SQLITE_CANTOPEN\)/);
    expect(store.notKeptMessage).toMatch(/count for this run only\. Free some space\.$/);
    store.addUsage('net', '2026-11', 5 * MiB);
    expect(store.used('net', '2026-11')).toBe(5 * MiB);
    // A store that opens says nothing.
    expect(new LinkStore(storeFile()).notKeptMessage).toBeNull();
  });
});
