// bench/aggregate: p50/p95 latency of /data/aggregate/ for each period over one station-year, beside the
// same statistics computed by a raw GROUP BY over `readings` in the same run. Target: daily >= 30x faster.
import pg from 'pg';
import { loadStationYears } from './dataset.js';
import { eachEngine, fmt, percentile, startServe } from './lib.js';

const periods = ['hour', 'day', 'week', 'month'] as const;
const apiRuns = Number(process.env.BENCH_API_RUNS ?? 30);
const rawRuns = Number(process.env.BENCH_RAW_RUNS ?? 7);

async function timed(runs: number, fn: () => Promise<void>): Promise<number[]> {
  await fn(); // warm
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

await eachEngine('aggregate', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const serve = await startServe(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (const period of periods) {
      const api = await timed(apiRuns, async () => {
        const response = await fetch(`${serve.url}/api/v1/data/aggregate/?station=${station}&period=${period}`);
        if (response.status !== 200) throw new Error(`aggregate ${period}: ${response.status}`);
        await response.arrayBuffer();
      });
      const raw = await timed(rawRuns, async () => {
        await client.query(
          `select date_trunc($2, ts, 'UTC') as period_start, count(*), avg(temperature_c), min(temperature_c), max(temperature_c),
             avg(humidity_rh), avg(pressure_hpa), avg(pm2_5) from readings where station_id = $1 group by 1 order by 1`,
          [station, period],
        );
      });
      const row = {
        engine, period,
        api_p50_ms: +percentile(api, 50).toFixed(2), api_p95_ms: +percentile(api, 95).toFixed(2),
        raw_p50_ms: +percentile(raw, 50).toFixed(1), raw_p95_ms: +percentile(raw, 95).toFixed(1),
        speedup: +(percentile(raw, 50) / percentile(api, 50)).toFixed(1),
      };
      results.push(row);
      console.log(`${engine.padEnd(9)} ${period.padEnd(5)}  API p50 ${fmt(row.api_p50_ms, 1).padStart(6)} ms p95 ${fmt(row.api_p95_ms, 1).padStart(6)} ms   raw GROUP BY p50 ${fmt(row.raw_p50_ms, 0).padStart(5)} ms p95 ${fmt(row.raw_p95_ms, 0).padStart(5)} ms   speed-up ${row.speedup}x`);
    }
  } finally {
    await client.end();
    await serve.stop();
  }
  return results;
});
