// An --import hook for the agent: every HTTP request it makes (undici, node:http) with
// its start, body sent, answer and end times (ms since the epoch), one JSON line each,
// into the file named by DMS_HTTP_TRACE (main thread only; nothing without it). For a
// timeline of a run (issue 33): first request, first byte to the bucket, parts in
// flight over time, the tail after the last part. E.g.
//   DMS_HTTP_TRACE=/tmp/trace.jsonl npm run bench -- --only survey --rounds 1 \
//     --agent-node-args="--import=$PWD/test/bench/http-trace.mjs"
// (each agent run of the bench overwrites the file: the last run's requests stay).
import dc from 'node:diagnostics_channel';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const out = process.env.DMS_HTTP_TRACE;
const fd = out && isMainThread ? fs.openSync(out, 'w') : null;
const write = (o) => {
  if (fd !== null) fs.writeSync(fd, JSON.stringify({ t: Date.now(), ...o }) + '\n');
};
const ids = new WeakMap();
let n = 0;
const id = (r) => {
  if (!ids.has(r)) ids.set(r, ++n);
  return ids.get(r);
};
if (fd !== null) {
  write({ ev: 'origin', origin: Math.round(performance.timeOrigin) });
  const on = (name, f) => dc.subscribe(name, f);
  on('undici:request:create', ({ request }) =>
    write({ ev: 'start', id: id(request), m: request.method, p: request.path }),
  );
  on('undici:request:bodySent', ({ request }) => write({ ev: 'sent', id: id(request) }));
  on('undici:request:headers', ({ request, response }) =>
    write({ ev: 'headers', id: id(request), s: response.statusCode }),
  );
  on('undici:request:trailers', ({ request }) => write({ ev: 'end', id: id(request) }));
  on('undici:request:error', ({ request }) => write({ ev: 'error', id: id(request) }));
  // node:http (the SDK's multipart calls): the answer's headers, not its body's end.
  on('http.client.request.start', ({ request }) =>
    write({ ev: 'start', id: id(request), m: request.method, p: request.path }),
  );
  on('http.client.response.finish', ({ request, response }) =>
    write({ ev: 'headers', id: id(request), s: response.statusCode }),
  );
  process.on('exit', () => write({ ev: 'exit' }));
}
