// bench/scale: how each path holds up as the history grows. 1, 4 and 16 station-years of one-minute
// readings ending now (8.4 million rows at the end), loaded with COPY; on timescale the chunks older
// than 30 days go to the columnstore through its policy, as in production. At each size: the
// throughput of a new 10,000-reading batch through HTTP, and the latency of latest, historical 24 h,
// the hourly, daily and monthly aggregate of one station, compare of (up to) 10 stations over 720 h, stats and
// health, each also as a ratio to its own figure at one station-year, measured in the same run. Compare
// names min(10, N) stations and health lists them all, so both are also given per station.
// Targets: reads within 1.5x of one station-year at 16, ingest within 0.8x. Plus storage per station-year.
// The discovery document, which touches no database, is timed beside them: its own ratio is the machine's
// drift between the sizes, which a shared machine has.
import pg from 'pg';
import { createSlonikPool } from '../src/db/pool.js';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { loadStationYears, yearMinutes } from './dataset.js';
import { benchRows, chunk, eachEngine, fmt, medianMs, startServe } from './lib.js';

const sizes = (process.env.BENCH_SCALE_SIZES ?? '1,4,16').split(',').map(Number);
const runs = Number(process.env.BENCH_SCALE_RUNS ?? 20);
const ingestBatches = Number(process.env.BENCH_SCALE_INGEST_BATCHES ?? 10);

/** A GET whose whole body is read and parsed, as a client does. */
const getJson = (url: string) => async () => {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
  await response.json();
};

/** Table, index and rollup bytes, and on timescale the columnstore's before/after. */
async function storage(client: pg.Client, engine: string) {
  const rollups = ['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly'];
  if (engine === 'timescale') {
    // Each size's stations cover the same year as the ones before, so its refresh materialises that year's
    // buckets again: the rows it replaces leave their space in the rollups' chunks, which a vacuum keeps
    // for the next refresh to reuse (2 station-years: 29.5 MB as left, 19.7 MB once rewritten). The
    // figure is the rollups' own size: their chunks rewritten first.
    const chunks = await client.query(`select format('%I.%I', chunk_schema, chunk_name) as chunk from timescaledb_information.chunks
      where (hypertable_schema, hypertable_name) in (select materialization_hypertable_schema, materialization_hypertable_name
        from timescaledb_information.continuous_aggregates)`);
    for (const { chunk } of chunks.rows as { chunk: string }[]) await client.query(`vacuum full ${chunk}`);
    const table = await client.query(`select table_bytes, index_bytes, total_bytes from hypertable_detailed_size('readings')`);
    const views = await client.query(`
      select coalesce(sum(hypertable_size(format('%I.%I', materialization_hypertable_schema, materialization_hypertable_name)::regclass)), 0)::bigint as bytes
      from timescaledb_information.continuous_aggregates where view_name = any($1)`, [rollups]);
    const columnstore = await client.query(`
      select coalesce(sum(before_compression_total_bytes), 0)::bigint as before, coalesce(sum(after_compression_total_bytes), 0)::bigint as after
      from hypertable_compression_stats('readings')`);
    return {
      table: Number(table.rows[0].table_bytes), indexes: Number(table.rows[0].index_bytes), rollups: Number(views.rows[0].bytes),
      columnstore_ratio: columnstore.rows[0].after > 0 ? Number(columnstore.rows[0].before) / Number(columnstore.rows[0].after) : null,
    };
  }
  const sizes = await client.query(`
    select pg_table_size('readings') as table, pg_indexes_size('readings') as indexes,
      (select sum(pg_total_relation_size(r::regclass)) from unnest($1::text[]) r) as rollups`, [rollups]);
  return { table: Number(sizes.rows[0].table), indexes: Number(sizes.rows[0].indexes), rollups: Number(sizes.rows[0].rollups), columnstore_ratio: null };
}

await eachEngine('scale', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  // A year ending at this minute, so that latest, history and compare have recent data.
  const start = Math.floor(Date.now() / 60_000) * 60_000 - yearMinutes * 60_000;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const pool = await createSlonikPool(databaseUrl, { poolSize: 1, statementTimeoutMs: 3_600_000 });
  let loaded = 0;
  const baseline: Record<string, number> = {};
  try {
    for (const size of sizes) {
      await loadStationYears(databaseUrl, engine, size - loaded, { first: loaded, start });
      loaded = size;
      if (engine === 'timescale') {
        const started = performance.now();
        const job = await client.query(`select job_id from timescaledb_information.jobs where proc_name = 'policy_compression' and hypertable_name = 'readings'`);
        await client.query(`call run_job($1)`, [job.rows[0].job_id]);
        // Rows moved into the columnstore leave their space in the chunk's heap until a vacuum, which
        // autovacuum does in production: the storage figure is what the table settles to.
        await client.query('vacuum analyze');
        console.log(`columnstore policy run in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      }
      // The load's dirty pages are written now, so that the checkpointer's writeback of millions of COPYed rows
      // does not run beside the upload timed below.
      await client.query('checkpoint');
      // A new station's history, 10,000 readings a batch, as an upload after an outage: before the year.
      const stationId = `scale-ingest-${size}`;
      await upsertStation(pool, { station_id: stationId, name: stationId, location_name: 'Bench', altitude_m: 1, latitude: 45, longitude: 6, status: 'active' });
      const { key } = await issueKey(pool, stationId);
      // Aggregates computed each time: what is measured is the database path as the history grows.
      const serve = await startServe(databaseUrl, { AGGREGATE_CACHE_MB: '0' });
      try {
        const bodies = chunk(benchRows((ingestBatches + 1) * 10_000, start - 2 * yearMinutes * 60_000), 10_000).map((readings) => Buffer.from(JSON.stringify({ station_id: stationId, readings })));
        const post = async (body: Buffer) => {
          const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` }, body });
          const result = (await response.json()) as { accepted: number };
          if (response.status !== 201 || result.accepted !== 10_000) throw new Error(`ingest: ${response.status} ${JSON.stringify(result)}`);
        };
        // The first batch warms the new process (its statements prepared, its buffers grown) and is not
        // counted: with five batches it swung the rate by a third from one size to the next.
        await post(bodies[0]!);
        let started = performance.now();
        for (const body of bodies.slice(1)) await post(body);
        const ingest = (ingestBatches * 10_000) / ((performance.now() - started) / 1000);
        // The upload's rollups settle first (its backlog refreshed: the aggregate waits for it), so that the
        // reads measure the history's size rather than a refresh running beside them.
        await getJson(`${serve.url}/api/v1/data/aggregate/?station=${stationId}&period=day`)();
        const ten = Array.from({ length: Math.min(10, size) }, (_, i) => `year-${i + 1}`).join(',');
        const api = `${serve.url}/api/v1`;
        started = performance.now();
        const latencies: Record<string, number> = {
          // No database: how much the machine itself drifted between sizes, to read the others against.
          discovery: await medianMs(runs, getJson(`${api}/`)),
          latest: await medianMs(runs, getJson(`${api}/data/latest/?station=year-1`)),
          historical_24h: await medianMs(runs, getJson(`${api}/data/historical/?station=year-1&hours=24`)),
          aggregate_hour: await medianMs(runs, getJson(`${api}/data/aggregate/?station=year-1&period=hour`)),
          aggregate_day: await medianMs(runs, getJson(`${api}/data/aggregate/?station=year-1&period=day`)),
          aggregate_month: await medianMs(runs, getJson(`${api}/data/aggregate/?station=year-1&period=month`)),
          compare_720h: await medianMs(runs, getJson(`${api}/data/compare/?stations=${ten}&hours=720`)),
          stats: await medianMs(runs, getJson(`${api}/stats/`)),
          health: await medianMs(runs, getJson(`${api}/health/`)),
        };
        // Compare and health list every station they name or know: per station, they measure the history.
        const stationCount = Math.min(10, size);
        latencies.compare_720h_per_station = latencies.compare_720h! / stationCount;
        latencies.health_per_station = latencies.health! / (size + sizes.indexOf(size) + 1);
        baseline.ingest ??= ingest;
        const bytes = await storage(client, engine);
        const row: Record<string, unknown> = {
          engine, station_years: size, rows: size * yearMinutes, ingest_rows_per_s: Math.round(ingest), ingest_vs_1: +(ingest / baseline.ingest!).toFixed(2),
          storage_per_station_year_mb: {
            table: +(bytes.table / size / 1e6).toFixed(1), indexes: +(bytes.indexes / size / 1e6).toFixed(1), rollups: +(bytes.rollups / size / 1e6).toFixed(1),
          },
          columnstore_ratio: bytes.columnstore_ratio === null ? null : +bytes.columnstore_ratio.toFixed(1),
        };
        console.log(`${engine} ${size} station-year(s), ${fmt(size * yearMinutes)} rows: ingest ${fmt(ingest)} rows/s (${row.ingest_vs_1} of 1 station-year)`);
        for (const [path, ms] of Object.entries(latencies)) {
          baseline[path] ??= ms;
          row[`${path}_p50_ms`] = +ms.toFixed(2);
          row[`${path}_vs_1`] = +(ms / baseline[path]!).toFixed(2);
          console.log(`  ${path.padEnd(16)} p50 ${fmt(ms, 2).padStart(8)} ms   ${(ms / baseline[path]!).toFixed(2)}x its latency at 1 station-year`);
        }
        console.log(`  storage per station-year: table ${(row.storage_per_station_year_mb as { table: number }).table} MB, indexes ${(row.storage_per_station_year_mb as { indexes: number }).indexes} MB, rollups ${(row.storage_per_station_year_mb as { rollups: number }).rollups} MB${bytes.columnstore_ratio ? `, columnstore ${row.columnstore_ratio}x` : ''}`);
        results.push(row);
      } finally {
        await serve.stop();
      }
    }
  } finally {
    await pool.end();
    await client.end();
  }
  return results;
});
