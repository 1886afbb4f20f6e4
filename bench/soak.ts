// bench/soak: mixed traffic for a bounded time on loopback (autocannon: reads across every endpoint from 50
// client addresses, with the rate limit on) plus steady ingest from several stations; reports requests/s,
// p50/p99, status counts (429s are the limit working) and the serving process's memory before and after.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { createSlonikPool } from '../src/db/pool.js';
import { issueKey } from '../src/stations/keys.js';
import { eachEngine, envmon, fmt, startServe } from './lib.js';

const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? 30);
// Off by default so that the figures measure the service; BENCH_SOAK_RATE_LIMIT=120 measures the limit too.
const rateLimit = process.env.BENCH_SOAK_RATE_LIMIT ?? '0';
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
const paths = [
  '/api/v1/', '/api/v1/health/', '/api/v1/stations/', '/api/v1/stations/?output=geojson', '/api/v1/data/latest/?station=alpine-01',
  '/api/v1/data/historical/?station=coast-01&hours=6', '/api/v1/data/aggregate/?station=urban-01&period=day',
  '/api/v1/data/aggregate/?station=alpine-01&period=hour&from_date=2026-11-01&output=csv', '/api/v1/data/compare/?stations=alpine-01,coast-01,urban-01&hours=48',
  '/api/v1/data/download/?station=coast-01&from_date=2026-11-20&to_date=2026-11-20', '/api/v1/notes/', '/api/v1/notes/?output=geojson',
  '/api/v1/publications/', '/api/v1/publications/1/', '/publications/1/cite.ris', '/api/v1/team/', '/api/v1/research/', '/api/v1/education/',
  '/api/v1/activity/', '/api/v1/search/?q=fog', '/api/v1/stats/', '/api/v1/changelog/', '/embed/station/alpine-01/', '/api/v1/nothing/',
];

await eachEngine('soak', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  await envmon(['demo'], databaseUrl);
  const pool = await createSlonikPool(databaseUrl, { poolSize: 1, statementTimeoutMs: 60_000 });
  const keys = await Promise.all(['alpine-01', 'coast-01', 'urban-01'].map(async (s) => [s, (await issueKey(pool, s)).key] as const));
  await pool.end();
  const serve = await startServe(databaseUrl, { RATE_LIMIT_PER_MINUTE: rateLimit, TRUST_PROXY: 'true' });
  const pid = serve.child.pid!;
  try {
    await fetch(`${serve.url}/api/v1/stations/`);
    const before = rss(pid);
    let peak = before;
    let middle = NaN;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 200);
    const midpoint = setTimeout(() => (middle = rss(pid)), (seconds * 1000) / 2);
    // Steady ingest: each station posts a minute of readings every 250 ms, in the future of the demo data.
    let ingested = 0;
    let ingestErrors = 0;
    let stop = false;
    const ingest = keys.map(async ([station, key], s) => {
      for (let i = 1; !stop; i++) {
        const ts = new Date(Date.now() + (s * 1e6 + i) * 60_000).toISOString();
        const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
          body: JSON.stringify({ station_id: station, readings: [{ timestamp: ts, temperature_c: 10, humidity_rh: 60, pm2_5: 8 }] }),
        });
        if (response.status === 201) ingested++;
        else ingestErrors++;
        await response.arrayBuffer();
        await new Promise((r) => setTimeout(r, 250));
      }
    });
    let n = 0;
    const run = await autocannon({
      url: serve.url,
      connections: 16,
      duration: seconds,
      requests: [{ setupRequest: (req) => ({ ...req, path: paths[n++ % paths.length]!, headers: { 'x-forwarded-for': `10.0.0.${n % 50}` } }) }],
    });
    stop = true;
    await Promise.all(ingest);
    clearInterval(sampler);
    clearTimeout(midpoint);
    await new Promise((r) => setTimeout(r, 2000));
    const after = rss(pid);
    const row = {
      engine, seconds, connections: 16, requests_per_s: Math.round(run.requests.average), p50_ms: run.latency.p50, p99_ms: run.latency.p99,
      ok_2xx: run['2xx'], status_429: run.statusCodeStats?.['429']?.count ?? 0, non_2xx: run.non2xx, errors: run.errors, timeouts: run.timeouts,
      ingest_201: ingested, ingest_errors: ingestErrors, rss_before_mb: Math.round(before), rss_middle_mb: Math.round(middle), rss_peak_mb: Math.round(peak), rss_after_mb: Math.round(after), rate_limit: rateLimit,
    };
    results.push(row);
    const other = row.non_2xx - row.status_429 - (run.statusCodeStats?.['404']?.count ?? 0);
    console.log(`${engine.padEnd(9)} ${seconds} s x16: ${fmt(row.requests_per_s)} req/s, p50 ${row.p50_ms} ms, p99 ${row.p99_ms} ms; 2xx ${row.ok_2xx}, 429 ${row.status_429}, ` +
      `404 (the one unknown path) ${run.statusCodeStats?.['404']?.count ?? 0}, other non-2xx ${other}, errors ${row.errors}, timeouts ${row.timeouts}; ` +
      `ingest ${row.ingest_201} x 201, ${row.ingest_errors} failed; RSS ${row.rss_before_mb} MB before, ${row.rss_middle_mb} at half time, ${row.rss_peak_mb} peak, ${row.rss_after_mb} after (rate limit ${rateLimit})`);
  } finally {
    await serve.stop();
  }
  return results;
});
