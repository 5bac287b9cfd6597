// Scenario 6 (issue 20, "free the card at the speed of the card"): a 2 GiB
// survey card offloaded to two local destinations, the card read at 92 MB/s
// as through a real UHS-I reader (its loop device throttled in a blkio
// cgroup that every measured tool runs in). The agent's `sync
// --copy-to A --copy-to B` is timed from its start to its `local-verdict`
// line (both copies written, flushed and read back from the disk), then
// killed: the upload that goes on from the copies is not what is measured.
// Against, in the same round and each from a cold page cache: `cp -r` of
// the card to one destination then `sync`, and `rclone copy --checksum` to
// both destinations then `rclone check` of each. The same card with no
// destination: the agent's whole `sync` against `rclone copy` to the bucket.
// Issue 33, the card at the speed of any reader: the agent and cp again with
// the card read at 200 MB/s (a fast microSD reader); then the card as fast as
// the disk (cold), and in the page cache, against the same work done by
// standard tools in one script (md5sum of the card, cp -r to each
// destination, sync, each copy read back with O_DIRECT into md5sum), with
// the CPU seconds per GiB of each. See test/bench/README.md.
import { Buffer } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cardDevice, throttleReads } from './card-device.mjs';
import { makeCard } from './cards.mjs';
import { measure } from './proc.mjs';
import { readsUnder, straceArgs } from './read-once.mjs';
import { sizeText } from './report.mjs';

/**
 * The field uplink while the card is copied (KiB/s; 40 Mbit/s, a good 4G/5G
 * link): the agent's own bandwidth limit (bandwidthLimitKiBps). The upload
 * starts from the verified copies during the copy, as it does in the field,
 * without taking the cores a loopback upload at full speed would take (the
 * service and its bucket run on this same machine).
 */
export const UPLINK_KIBPS = 5120;

/** The card's read speed (bytes/s): "64 GB at 92 MB/s, a real UHS-I reader" (issue 20). */
export const CARD_READ_BPS = 92_000_000;

/** A fast microSD reader's speed (bytes/s): SanDisk's QuickFlow-class readers, 160-200 MB/s (issue 33). */
export const FAST_READER_BPS = 200_000_000;

/**
 * The agent's work done by standard tools in one script: the card's MD5
 * (md5sum), cp -r to each destination, sync, then each copy read back from
 * the disk (dd iflag=direct) into md5sum and compared with the card's.
 */
const STD_TOOLS = `set -e
card="$1"; shift
cd "$card"; find . -type f | sort > /tmp/dms-std-files.$$
xargs -d '\\n' md5sum < /tmp/dms-std-files.$$ > /tmp/dms-std-card.$$
for d in "$@"; do cp -r "$card" "$d/card"; done
sync
for d in "$@"; do
  cd "$d/card"
  while IFS= read -r f; do
    printf '%s  %s\\n' "$(dd if="$f" iflag=direct bs=4M status=none | md5sum | cut -d' ' -f1)" "$f"
  done < /tmp/dms-std-files.$$ | cmp -s - /tmp/dms-std-card.$$
done
rm -f /tmp/dms-std-files.$$ /tmp/dms-std-card.$$`;

const rotate = (list, n) => list.map((_, i) => list[(i + n) % list.length]);

/** Every regular file under `dir` (the agent's ascmhl/ histories left out): count and bytes. */
function filesUnder(dir) {
  let count = 0;
  let bytes = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'ascmhl') walk(p);
      } else if (e.isFile()) {
        count++;
        bytes += fs.statSync(p).size;
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return { count, bytes };
}

function emptyDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
}

/**
 * Steps run one after the other, as one tool: wall and CPU added, the highest peak. `wrap` puts
 * each in the card's throttle; `beforeStep(i)` runs (untimed) before every step but the first.
 */
async function chain(steps, opts, wrap = (cmd, args) => [cmd, args], beforeStep = () => {}) {
  const out = { code: 0, wallS: 0, cpuS: 0, peakRssMiB: 0, svcCpuS: 0, stderrTail: '' };
  for (const [i, [cmd, args]] of steps.entries()) {
    if (i > 0) beforeStep(i);
    const r = await measure(...wrap(cmd, args), opts);
    out.wallS += r.wallS;
    out.cpuS += r.cpuS;
    out.peakRssMiB = Math.max(out.peakRssMiB, r.peakRssMiB);
    out.svcCpuS = r.svcCpuS === null || out.svcCpuS === null ? null : out.svcCpuS + r.svcCpuS;
    if (r.code !== 0) {
      out.code = r.code;
      out.stderrTail = `${path.basename(cmd)} ${args.join(' ')}: ${r.stderrTail}`;
      break;
    }
  }
  return out;
}

/**
 * h: the harness (bench.mjs): { tmp, spec, rounds, svc, peers, log, describe,
 * dropCaches, wipeBucket, sts, agentArgs, agentConfig, runAgent, runRclone,
 * nodeWarm, rcloneLocalEnv, strace, keep (the strace log stays in tmp) }.
 */
export async function offloadScenario(h) {
  const mount = path.join(h.tmp, 'M3E_CARD');
  const planned = h.spec.groups.reduce((n, g) => n + g.count * g.size, 0);
  const { device, reason } = cardDevice(h.tmp, mount, planned);
  if (!device) {
    h.log(`offload: no card device (${reason}); the card is a plain folder, its read counter n/a`);
    fs.mkdirSync(mount, { recursive: true });
  }
  const { throttle, reason: why } = device
    ? throttleReads(device, CARD_READ_BPS)
    : { throttle: null, reason: 'no card device' };
  if (!throttle)
    h.log(`offload: the card's reads are NOT throttled (${why}): every run reads it at disk speed`);
  const fast = throttle ? throttleReads(device, FAST_READER_BPS).throttle : null;
  try {
    return await rounds(h, mount, device, throttle, fast);
  } finally {
    fast?.close();
    throttle?.close();
    device?.close();
    fs.rmSync(mount, { recursive: true, force: true });
  }
}

async function rounds(h, mount, device, throttle, fast) {
  const card = makeCard(mount, h.spec);
  execFileSync('sync');
  const n = card.files.length;
  const root = card.root;
  h.log(
    `offload card: ${n} files, ${sizeText(card.bytes)} in one flight folder${device ? ` on ${device.dev} (ext4)` : ''}`,
  );
  const dests = [path.join(h.tmp, 'dest-A'), path.join(h.tmp, 'dest-B')];
  const cardRead = () => (device ? device.readBytes() : null);
  const t0 = await h.sts(h.svc);
  const runs = {
    agent: [],
    cp: [],
    rclone: [],
    agent_fast: [],
    cp_fast: [],
    agent_200: [],
    cp_200: [],
    std_fast: [],
    agent_warm: [],
    std_warm: [],
    plain_agent: [],
    plain_rclone: [],
  };
  // Throttled: the card read as through a card reader. Fast: as fast as the disk (context rows).
  const inReader = throttle ? throttle.wrap : (cmd, args) => [cmd, args];
  const direct = (cmd, args) => [cmd, args];
  const readerCheck = throttle ? checkThrottle(h, card, inReader, CARD_READ_BPS) : null;
  const inFastReader = fast ? fast.wrap : null;
  const fastCheck = fast ? checkThrottle(h, card, inFastReader, FAST_READER_BPS) : null;

  /** Destinations emptied, the bucket wiped, the page cache dropped, the tool's own code read again. */
  const cold = (warm) => {
    for (const d of dests) emptyDir(d);
    h.wipeBucket(t0);
    const dropped = h.dropCaches();
    execFileSync(warm[0], warm.slice(1), { stdio: 'ignore', env: h.rcloneLocalEnv() });
    return dropped;
  };
  const withCard = async (f) => {
    const before = cardRead();
    const r = await f();
    const after = r.mark?.cardReadBytes ?? cardRead();
    return { ...r, cardReadBytes: before === null ? null : after - before };
  };

  const agentBlock = (wrap, key, label) => async () => {
    const r = await withCard(() => runToVerdict(h, root, dests, cardRead, wrap));
    const problems = r.error ? [r.error] : [];
    for (const d of dests) {
      const got = filesUnder(d);
      if (got.count !== n || got.bytes !== card.bytes)
        problems.push(`${path.basename(d)} holds ${got.count} files, ${got.bytes} bytes`);
    }
    const res = { ...r, ok: problems.length === 0, error: problems.join('; ') || undefined };
    h.describe(label, res, card.bytes, n);
    runs[key].push(res);
  };
  const stdBlock = (key, label) => async () => {
    const r = await withCard(() =>
      chain([['bash', ['-c', STD_TOOLS, 'std-tools', root, ...dests]]], { svcPid: h.svc.pid }, direct),
    );
    const res = { ...r, ok: r.code === 0, error: r.code === 0 ? undefined : r.stderrTail.slice(-500) };
    h.describe(label, res, card.bytes, n);
    runs[key].push(res);
  };
  const cpBlock = (wrap, key, label) => async () => {
    const r = await withCard(() =>
      chain(
        [
          ['cp', ['-r', root, path.join(dests[0], 'card')]],
          ['sync', []],
        ],
        { svcPid: h.svc.pid },
        wrap,
      ),
    );
    const res = { ...r, ok: r.code === 0, error: r.code === 0 ? undefined : r.stderrTail.slice(-500) };
    h.describe(label, res, card.bytes, n);
    runs[key].push(res);
  };
  const blocks = {
    agent: agentBlock(inReader, 'agent', 'agent (safe)'),
    cp: cpBlock(inReader, 'cp', 'cp -r + sync'),
    agent_fast: agentBlock(direct, 'agent_fast', 'agent (safe), card unthrottled'),
    cp_fast: cpBlock(direct, 'cp_fast', 'cp -r + sync, card unthrottled'),
    std_fast: stdBlock('std_fast', 'md5sum + cp -r ×2 + sync + read-back ×2, card unthrottled'),
    agent_warm: agentBlock(direct, 'agent_warm', 'agent (safe), card in the page cache'),
    std_warm: stdBlock('std_warm', 'md5sum + cp -r ×2 + sync + read-back ×2, card in the page cache'),
    ...(inFastReader
      ? {
          agent_200: agentBlock(inFastReader, 'agent_200', 'agent (safe), 200 MB/s reader'),
          cp_200: cpBlock(inFastReader, 'cp_200', 'cp -r + sync, 200 MB/s reader'),
        }
      : {}),
    rclone: async () => {
      if (!h.peers.rclone) return;
      const rc = h.peers.rclone.path;
      const [a, b] = dests.map((d) => path.join(d, 'card'));
      // A 64 GB card does not fit in a laptop's page cache: each pass reads it from the card.
      const recool = () => {
        h.dropCaches();
        execFileSync(rc, ['version'], { stdio: 'ignore', env: h.rcloneLocalEnv() });
      };
      const r = await withCard(() =>
        chain(
          [
            [rc, ['copy', '--checksum', root, a]],
            [rc, ['copy', '--checksum', root, b]],
            [rc, ['check', root, a]],
            [rc, ['check', root, b]],
          ],
          { svcPid: h.svc.pid, env: h.rcloneLocalEnv() },
          inReader,
          recool,
        ),
      );
      const res = { ...r, ok: r.code === 0, error: r.code === 0 ? undefined : r.stderrTail.slice(-500) };
      h.describe('rclone ×2+check', res, card.bytes, n);
      runs.rclone.push(res);
    },
  };
  const warmOf = {
    agent: h.nodeWarm,
    agent_fast: h.nodeWarm,
    cp: ['cp', '--version'],
    cp_fast: ['cp', '--version'],
    cp_200: ['cp', '--version'],
    agent_200: h.nodeWarm,
    std_fast: ['md5sum', '--version'],
    rclone: h.peers.rclone ? [h.peers.rclone.path, 'version'] : ['true'],
  };
  let cache = 'cold';
  for (let round = 1; round <= h.rounds; round++) {
    h.log(`offload round ${round}/${h.rounds} (load ${loadText()})`);
    for (const k of rotate(['agent', 'cp', 'rclone'], round - 1)) {
      if (!cold(warmOf[k])) cache = 'warm';
      await blocks[k]();
    }
    if (inFastReader)
      for (const k of round % 2 ? ['agent_200', 'cp_200'] : ['cp_200', 'agent_200']) {
        if (!cold(warmOf[k])) cache = 'warm';
        await blocks[k]();
      }
    if (throttle)
      for (const k of rotate(['agent_fast', 'cp_fast', 'std_fast'], round - 1)) {
        if (!cold(warmOf[k])) cache = 'warm';
        await blocks[k]();
      }
    // The card in the page cache (a staging SSD read again, or a card just read): CPU-bound work.
    for (const k of round % 2 ? ['agent_warm', 'std_warm'] : ['std_warm', 'agent_warm']) {
      for (const d of dests) emptyDir(d);
      h.wipeBucket(t0);
      warmCard(card);
      await blocks[k]();
    }
    // The same card, no destination: the whole sync to the workspace, against rclone to the bucket.
    for (const k of round % 2 ? ['plain_agent', 'plain_rclone'] : ['plain_rclone', 'plain_agent']) {
      if (k === 'plain_rclone' && !h.peers.rclone) continue;
      if (!cold(k === 'plain_agent' ? h.nodeWarm : warmOf.rclone)) cache = 'warm';
      const r = await withCard(() =>
        k === 'plain_agent'
          ? h.runAgent(h.svc, root, { uploaded: n, fast_uploaded: 0, failed: 0, pending: 0 })
          : h.runRclone(h.svc, h.peers, root, `bench-rclone-offload-${round}`),
      );
      h.describe(k === 'plain_agent' ? 'agent (no dest)' : 'rclone (bucket)', r, card.bytes, n);
      runs[k].push(r);
    }
  }
  for (const d of dests) emptyDir(d);
  h.wipeBucket(t0);
  const proof = h.strace ? await readOnceProof(h, card, dests, cardRead) : null;
  for (const d of dests) fs.rmSync(d, { recursive: true, force: true });
  h.wipeBucket(t0);
  return {
    files: n,
    bytes: card.bytes,
    device: device?.dev ?? null,
    cache,
    uplinkKiBps: UPLINK_KIBPS,
    throttle: throttle ? { bps: throttle.bps, check: readerCheck } : null,
    fastReader: fast ? { bps: fast.bps, check: fastCheck } : null,
    runs,
    proof,
  };
}

/**
 * The throttle checked before the rounds: the card's biggest file read cold
 * in the card reader's cgroup with dd, buffered then O_DIRECT: MB/s of each.
 */
function checkThrottle(h, card, inReader, bps) {
  const big = card.files.reduce((a, b) => (b.size > a.size ? b : a));
  const rate = (flags) => {
    h.dropCaches();
    const t0 = performance.now();
    execFileSync(...inReader('dd', [`if=${big.path}`, 'of=/dev/null', 'bs=1M', ...flags]), {
      stdio: 'ignore',
    });
    return big.size / ((performance.now() - t0) / 1000) / 1e6;
  };
  const out = {
    file: path.relative(card.root, big.path),
    bytes: big.size,
    buffered_mb_s: rate([]),
    direct_mb_s: rate(['iflag=direct']),
  };
  h.log(
    `offload: card reads throttled to ${bps / 1e6} MB/s; dd of ${out.file} (${sizeText(big.size)}) cold in the reader: ` +
      `${out.buffered_mb_s.toFixed(1)} MB/s buffered, ${out.direct_mb_s.toFixed(1)} MB/s O_DIRECT`,
  );
  return out;
}

/** Every card file read once through the page cache (and left there). */
function warmCard(card) {
  for (const f of card.files) {
    const fd = fs.openSync(f.path, 'r');
    const buf = Buffer.allocUnsafe(4 * 1024 * 1024);
    try {
      while (fs.readSync(fd, buf, 0, buf.length, null) > 0);
    } finally {
      fs.closeSync(fd);
    }
  }
}

function loadText() {
  return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** The agent's `sync --copy-to A --copy-to B` with a field uplink, until its local-verdict line. */
async function runToVerdict(h, root, dests, cardRead, wrap) {
  const state = path.join(h.tmp, `state-offload-${Date.now()}`);
  fs.mkdirSync(state, { recursive: true });
  fs.writeFileSync(
    path.join(state, 'config.json'),
    JSON.stringify({ ...h.agentConfig, bandwidthLimitKiBps: UPLINK_KIBPS }),
  );
  let verdict = null;
  const isVerdict = (l) => l.startsWith('{"type":"local-verdict"');
  const r = await measure(
    ...wrap(process.execPath, [
      ...h.agentArgs(root, state, h.svc),
      ...dests.flatMap((d) => ['--copy-to', d]),
    ]),
    {
      svcPid: h.svc.pid,
      onLine: (l) => {
        if (isVerdict(l)) verdict = JSON.parse(l);
      },
      until: isVerdict,
      onMark: () => ({ cardReadBytes: cardRead() }),
    },
  );
  fs.rmSync(state, { recursive: true, force: true });
  const m = r.mark;
  let error;
  if (!m) error = `no local-verdict line (exit ${r.code}): ${r.stderrTail.slice(-400)}`;
  else if (!verdict?.safe) error = `not locally safe: ${verdict?.reasons?.join(' ')}`;
  // Until the verdict: the copy phase. What came after (the kill) is not the agent's.
  return m
    ? {
        code: 0,
        wallS: m.wallS,
        cpuS: m.cpuS,
        peakRssMiB: m.peakRssMiB,
        svcCpuS: m.svcCpuS,
        ioReadBytes: m.ioReadBytes,
        threads: m.threads,
        waitForCpuS: m.waitForCpuS,
        mark: m,
        verdict,
        error,
      }
    : { ...r, error };
}

/**
 * One more run of the agent, not timed: the whole sync (copies, then the
 * upload from them, no uplink limit) under strace, every read of a card file
 * counted. A file read twice shows here even when its second read came from
 * the page cache.
 */
async function readOnceProof(h, card, dests, cardRead) {
  h.log('offload: read-once proof (the whole sync under strace, not timed)');
  for (const d of dests) emptyDir(d);
  h.dropCaches();
  const state = path.join(h.tmp, 'state-offload-proof');
  fs.mkdirSync(state, { recursive: true });
  if (h.agentConfig) fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(h.agentConfig));
  const log = path.join(h.tmp, 'offload-strace.log');
  const before = cardRead();
  let summary = null;
  const r = await measure(
    h.strace,
    [
      ...straceArgs(log),
      process.execPath,
      ...h.agentArgs(card.root, state, h.svc),
      ...dests.flatMap((d) => ['--copy-to', d]),
    ],
    {
      onLine: (l) => {
        if (l.startsWith('{"type":"summary"')) summary = JSON.parse(l);
      },
    },
  );
  const deviceBytes = before === null ? null : cardRead() - before;
  fs.rmSync(state, { recursive: true, force: true });
  const { files, mmaps } = readsUnder(log, card.root);
  if (!h.keep) fs.rmSync(log, { force: true });
  const sizes = new Map(card.files.map((f) => [f.path, f.size]));
  const twice = [...files.entries()]
    .filter(([p, f]) => f.bytes > (sizes.get(p) ?? 0))
    .map(([p, f]) => ({ path: path.relative(card.root, p), size: sizes.get(p) ?? null, bytes: f.bytes }));
  const unread = card.files.filter((f) => !files.has(f.path)).map((f) => path.relative(card.root, f.path));
  const bytes = [...files.values()].reduce((s, f) => s + f.bytes, 0);
  const ok = r.code === 0 && summary?.uploaded === card.files.length;
  const proof = {
    ok,
    error: ok ? undefined : `exit ${r.code}, summary ${JSON.stringify(summary)?.slice(0, 300)}`,
    files: card.files.length,
    filesRead: files.size,
    bytesRead: bytes,
    cardBytes: card.bytes,
    deviceBytes,
    twice,
    unread,
    mmaps: [...new Set(mmaps)],
  };
  h.log(
    `  proof: ${proof.filesRead} of ${proof.files} files read, ${(bytes / card.bytes).toFixed(4)}× the card's bytes by read calls; ` +
      `${twice.length} file(s) read more than once${twice.length ? `: ${twice.map((t) => `${t.path} ${t.bytes}/${t.size}`).join(', ')}` : ''}; ` +
      `device ${deviceBytes === null ? 'n/a' : `${(deviceBytes / card.bytes).toFixed(4)}×`}${ok ? '' : `; FAILED ${proof.error}`}`,
  );
  return proof;
}
