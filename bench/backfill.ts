// bench/backfill: what one station's backfill costs readers, and what checking the rollups costs. A
// station-year of one-minute readings is posted, then read quietly, then read again while two writers
// backfill the same station with 200-reading batches of an earlier year:
//
//   /stats/                                  during / quiet, p50 and p99
//   the backfilling station's monthly aggregate   during / quiet (it waits for its refresh, as it must)
//   another station's daily aggregate        during / quiet
//   envmon rollups verify --station          seconds per station-year (every level, one GROUP BY each)
//
// BENCH_BACKFILL_ROWS (525600) sets the history; BENCH_BACKFILL_READS (40) the requests of each path in
// each phase. Quiet and during are measured in the same run, one after the other, on the same database.
import pg from 'pg';
import { benchRows, chunk, eachEngine, envmon, fmt, percentile, startServe, stationsWithKeys } from './lib.js';

const historyRows = Number(process.env.BENCH_BACKFILL_ROWS ?? 525_600);
const reads = Number(process.env.BENCH_BACKFILL_READS ?? 40);
const batchSize = 10_000;
const backfillBatch = 200;

async function post(url: string, key: string, station: string, readings: unknown[]): Promise<void> {
  const response = await fetch(`${url}/api/v1/ingest/environmental/`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
    body: JSON.stringify({ station_id: station, readings }),
  });
  if (response.status !== 201) throw new Error(`ingest: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

/** Milliseconds of each of `reads` sequential requests of `path`, every byte read and the JSON parsed. */
async function latencies(url: string, path: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < reads; i++) {
    const started = performance.now();
    const response = await fetch(`${url}${path}`);
    if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
    await response.json();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

await eachEngine('backfill', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [historyKey, quietKey] = await stationsWithKeys(databaseUrl, ['bf-history', 'bf-quiet']);
  const serve = await startServe(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const start = Date.parse('2025-01-01T00:00:00Z');
    for (const batch of chunk(benchRows(historyRows, start), batchSize)) await post(serve.url, historyKey!, 'bf-history', batch);
    await post(serve.url, quietKey!, 'bf-quiet', benchRows(1_440, Date.now() - 2 * 86_400_000));
    if (engine === 'timescale') await client.query('call envmon_refresh_rollups()');
    await client.query('vacuum analyze');

    const paths = {
      stats: '/api/v1/stats/',
      backfilling_station_month: '/api/v1/data/aggregate/?station=bf-history&period=month',
      other_station_day: '/api/v1/data/aggregate/?station=bf-quiet&period=day',
    };
    const quiet: Record<string, number[]> = {};
    for (const [name, path] of Object.entries(paths)) quiet[name] = await latencies(serve.url, path);

    // Two writers backfill 2022 into the same station, batch after batch, while the same paths are read.
    let writing = true;
    let posted = 0;
    const writers = [0, 1].map(async (w) => {
      let from = Date.parse('2022-01-01T00:00:00Z') + w * 180 * 86_400_000;
      while (writing) {
        await post(serve.url, historyKey!, 'bf-history', benchRows(backfillBatch, from));
        from += backfillBatch * 60_000;
        posted += backfillBatch;
      }
    });
    const during: Record<string, number[]> = {};
    try {
      for (const [name, path] of Object.entries(paths)) during[name] = await latencies(serve.url, path);
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    for (const name of Object.keys(paths)) {
      const [q, d] = [quiet[name]!, during[name]!];
      const row = {
        path: name, quiet_p50_ms: +percentile(q, 50).toFixed(1), quiet_p99_ms: +percentile(q, 99).toFixed(1),
        during_p50_ms: +percentile(d, 50).toFixed(1), during_p99_ms: +percentile(d, 99).toFixed(1),
        ratio_p50: +(percentile(d, 50) / percentile(q, 50)).toFixed(2), ratio_p99: +(percentile(d, 99) / percentile(q, 99)).toFixed(2),
      };
      results.push({ engine, ...row });
      console.log(`${engine.padEnd(9)} ${name.padEnd(27)} quiet p50 ${fmt(row.quiet_p50_ms, 1).padStart(7)} ms p99 ${fmt(row.quiet_p99_ms, 1).padStart(7)} ms   ` +
        `during backfill p50 ${fmt(row.during_p50_ms, 1).padStart(7)} ms p99 ${fmt(row.during_p99_ms, 1).padStart(7)} ms   ratio ${row.ratio_p50} / ${row.ratio_p99}`);
    }
    console.log(`${engine.padEnd(9)} ${fmt(posted)} readings backfilled meanwhile by two writers`);

    // The verifier over the station: every level against one GROUP BY of its readings each.
    if (engine === 'timescale') await client.query('call envmon_refresh_rollups()');
    const years = Number((await client.query(`select count(*)::float8 / 525600 as years from readings where station_id = 'bf-history'`)).rows[0].years);
    const started = performance.now();
    const out = await envmon(['rollups', 'verify', '--station', 'bf-history'], databaseUrl);
    const seconds = (performance.now() - started) / 1000;
    if (!/readings_monthly: 0 buckets differ/.test(out)) throw new Error(`verify found differences:\n${out}`);
    results.push({ engine, path: 'rollups_verify', seconds: +seconds.toFixed(2), station_years: +years.toFixed(2), seconds_per_station_year: +(seconds / years).toFixed(2) });
    console.log(`${engine.padEnd(9)} envmon rollups verify --station: ${seconds.toFixed(1)} s for ${years.toFixed(2)} station-years (${(seconds / years).toFixed(1)} s per station-year)`);
  } finally {
    await client.end();
    await serve.stop();
  }
  return results;
});
