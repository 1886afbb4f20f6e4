// bench/latest: requests/s and p50/p99 latency of /data/latest/ under 16 concurrent connections
// (rate limit off), with autocannon, against one station-year.
import autocannon from 'autocannon';
import { loadStationYears } from './dataset.js';
import { eachEngine, fmt, startServe } from './lib.js';

const seconds = Number(process.env.BENCH_LATEST_SECONDS ?? 10);

await eachEngine('latest', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const serve = await startServe(databaseUrl);
  try {
    const run = await autocannon({ url: `${serve.url}/api/v1/data/latest/?station=${station}`, connections: 16, duration: seconds });
    const row = {
      engine, connections: 16, seconds, requests_per_s: Math.round(run.requests.average),
      p50_ms: run.latency.p50, p99_ms: run.latency.p99, errors: run.errors, non_2xx: run.non2xx,
    };
    results.push(row);
    console.log(`${engine.padEnd(9)} /data/latest/ x16   ${fmt(row.requests_per_s)} req/s   p50 ${row.p50_ms} ms   p99 ${row.p99_ms} ms   errors ${row.errors}   non-2xx ${row.non_2xx}`);
  } finally {
    await serve.stop();
  }
  return results;
});
