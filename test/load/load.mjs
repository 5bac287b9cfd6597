#!/usr/bin/env node
// Load test of the reference service (issue 7): autocannon against the
// waylines list and fast-upload endpoints, plus a bad-token run. Needs the
// build (dist/). See test/load/README.md.
//
//   node test/load/load.mjs [--duration 10] [--connections 50] [--json]
//
// Exit 0 when the service held (no errors, timeouts, unexpected statuses or
// wrong envelopes; still answering afterwards), 1 otherwise, 2 on bad usage.
import { parseArgs } from 'node:util';
import { DEFAULTS, formatReport, runLoad } from './core.mjs';

const USAGE = `Usage: node test/load/load.mjs [options]
  --duration <s>      seconds per endpoint (default ${DEFAULTS.duration})
  --connections <n>   concurrent connections (default ${DEFAULTS.connections})
  --warmup <s>        unmeasured warm-up per endpoint (default ${DEFAULTS.warmup}; 0 = none)
  --waylines <n>      waylines imported before the start (default ${DEFAULTS.waylines}; the 30 demo ones come on top)
  --known <n>         media uploaded before the runs, found by fast-upload (default ${DEFAULTS.known}; as many unknown)
  --only <list>       scenarios, comma-separated (default ${DEFAULTS.scenarios.join(',')})
  --log-level <lvl>   the service's log level (default ${DEFAULTS.logLevel}; "info" logs every request)
  --service-node-args "<args>"  node options of the service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  --json              one JSON object on stdout (the table goes to stderr)
  --keep              keep the temp dir (service data and log)`;

let opt;
try {
  ({ values: opt } = parseArgs({
    options: {
      duration: { type: 'string' },
      connections: { type: 'string' },
      warmup: { type: 'string' },
      waylines: { type: 'string' },
      known: { type: 'string' },
      only: { type: 'string' },
      'log-level': { type: 'string' },
      'service-node-args': { type: 'string' },
      json: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (err) {
  console.error(`${err.message}\n${USAGE}`);
  process.exit(2);
}
if (opt.help) {
  console.log(USAGE);
  process.exit(0);
}

function number(name, fallback, { min, max = Infinity, integer }) {
  const raw = opt[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    const most = max === Infinity ? '' : ` and at most ${max}`;
    console.error(
      `--${name} must be ${integer ? 'a whole number' : 'a number'} of at least ${min}${most} (got "${raw}").\n${USAGE}`,
    );
    process.exit(2);
  }
  return n;
}

const options = {
  duration: number('duration', DEFAULTS.duration, { min: 1, integer: false }),
  // The service takes at most 64 connections from one client address (its maxConnectionsPerAddress).
  connections: number('connections', DEFAULTS.connections, { min: 1, max: 64, integer: true }),
  warmup: number('warmup', DEFAULTS.warmup, { min: 0, integer: false }),
  waylines: number('waylines', DEFAULTS.waylines, { min: 0, integer: true }),
  known: number('known', DEFAULTS.known, { min: 1, integer: true }),
  scenarios: opt.only
    ? opt.only
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : DEFAULTS.scenarios,
  logLevel: opt['log-level'] ?? DEFAULTS.logLevel,
  serviceNodeArgs: (opt['service-node-args'] ?? '').split(' ').filter(Boolean),
  keep: opt.keep,
  log: (msg) => process.stderr.write(`[load ${new Date().toISOString().slice(11, 19)}] ${msg}\n`),
};

const unknownScenario = options.scenarios.find((s) => !DEFAULTS.scenarios.includes(s));
if (unknownScenario !== undefined) {
  console.error(`--only: unknown scenario "${unknownScenario}" (use ${DEFAULTS.scenarios.join(', ')}).`);
  process.exit(2);
}

let report;
try {
  report = await runLoad(options);
} catch (err) {
  console.error(`load test could not run: ${err.message}`);
  process.exit(2);
}

const text = formatReport(report);
if (opt.json) {
  process.stderr.write(`${text}\n`);
  process.stdout.write(`${JSON.stringify(report)}\n`);
} else {
  process.stdout.write(`${text}\n`);
}
process.exitCode = report.ok ? 0 : 1;
