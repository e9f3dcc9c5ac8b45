#!/usr/bin/env node
/**
 * autocannon in its own process (so it can be pinned to its own cores like wrk), for machines
 * without wrk. Usage: node bench/autocannon-runner.mjs '<json spec>' (see bench/lib/load.mjs);
 * prints `BENCH_RESULT {json}` in the shape runLoad() returns.
 */
import { readFileSync } from 'node:fs';
import process from 'node:process';
import autocannon from 'autocannon';

const spec = JSON.parse(process.argv[2]);
const check = spec.check === null ? null : new RegExp(spec.check);
let ok = 0;
let bad = 0;
let firstBad = '';

const request = {};
if (spec.rotate) {
  const tokens = readFileSync(spec.rotate.file, 'utf8').split('\n').filter((t) => t !== '');
  const [before, after] = spec.body.split(spec.rotate.placeholder);
  // The token before the first one sent: `start` when given (see bench/lib/load.mjs), else a random one.
  let i = ((spec.rotate.start ?? Math.floor(Math.random() * tokens.length)) + tokens.length - 1) % tokens.length;
  request.setupRequest = (req) => {
    i = (i + 1) % tokens.length;
    return { ...req, body: before + tokens[i] + after };
  };
}
if (check !== null) {
  request.onResponse = (status, body) => {
    if (status === 200 && check.test(body)) ok += 1;
    else {
      bad += 1;
      if (firstBad === '') firstBad = `${status} ${/<faultstring>(.*?)<\/faultstring>/s.exec(String(body))?.[1] ?? String(body).slice(0, 300)}`;
    }
  };
}

const result = await autocannon({
  url: spec.url,
  method: spec.method,
  headers: spec.headers,
  body: spec.body ?? undefined,
  connections: spec.connections,
  duration: spec.durationS,
  timeout: spec.timeoutS,
  pipelining: 1,
  // A fixed rate (shadow-cost.mjs): below saturation, every request is answered in its turn.
  ...(spec.overallRate && { overallRate: spec.overallRate }),
  requests: [request],
});

const requests = result.latency.totalCount ?? result.requests.total;
process.stdout.write(`BENCH_RESULT ${JSON.stringify({
  requests,
  // Requests answered (with a fixed rate, `requests` also counts autocannon's corrections for coordinated omission).
  sent: result.requests.total,
  durationS: result.duration,
  rps: requests / result.duration,
  p50Ms: result.latency.p50,
  p90Ms: result.latency.p90,
  p99Ms: result.latency.p99,
  maxMs: result.latency.max,
  errors: result.errors,
  non2xx: result.non2xx,
  checked: check === null ? null : { ok, bad, firstBad },
})}\n`);
