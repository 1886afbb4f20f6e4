// bench/versions: what versioned readings cost (6b7c467: readings.recorded_at, the station's lock taken for
// the session before BEGIN, `as_of` on the readings reads), each figure beside a limit measured in the same
// run, on every engine the server offers, through the real `envmon serve`:
//  1. ingest: readings/s of batches of 1,000 through HTTP, 1 and 4 concurrent clients (each its own
//     station), against a raw COPY of as many rows into the same database (copyReadings, as bench/ingest);
//  2. a station-year download (CSV, and output=parquet; every byte read) with `as_of` yesterday against the
//     same download live, medians of BENCH_VERSIONS_RUNS. Target: as_of <= 1.5x live;
//  3. a station-year aggregate (period=day and hour) with `as_of` yesterday against live (as served, from
//     the rollups through the aggregate cache, and with AGGREGATE_CACHE_MB=0) and against the limit of an
//     as_of one, the raw GROUP BY over the station's readings with the same statistics;
//  4. the station-year's storage with recorded_at and without it (the same fixture in a database migrated
//     by the checkout before the change); on timescale both as written and once the columnstore policy's
//     job has compressed its chunks (reads 2 and 3 are measured in both states there);
//  5. part 1 also against the checkout before the change (BENCH_BEFORE_REF, 1b892f5 by default, checked
//     out in a git worktree under the temporary directory and removed afterwards), so that before and
//     after each have their ratio to raw COPY from the same run, in alternating order.
// "After" is this checkout, or BENCH_AFTER_REF checked out the same way. Each database is migrated by its
// own checkout's `envmon migrate`; the fixture is written by SQL (insert ... generate_series), each
// reading with recorded_at its own timestamp (long before yesterday).
// Knobs: BENCH_VERSIONS_RUNS (timed runs per read, 5), BENCH_VERSIONS_ROUNDS (ingest rounds, 3),
// BENCH_VERSIONS_INGEST_ROWS (readings per ingest run, 60,000), BENCH_VERSIONS_MINUTES (the fixture, 525,600).
import http from 'node:http';
import type { Engine } from '../src/config.js';
import type { TestServer } from '../test/helpers/database.js';
import { yearMinutes, yearStart } from './dataset.js';
import { benchRows, chunk, copyReadings, fmt, openServer, percentile, saveResults, startServe, stationsWithKeys, withClient, type Serve } from './lib.js';
import { checkoutOf, migrateWith, thisCheckout, type Checkout } from './checkouts.js';

const runs = Number(process.env.BENCH_VERSIONS_RUNS ?? 5);
const fixtureMinutes = Number(process.env.BENCH_VERSIONS_MINUTES ?? yearMinutes);
const ingestRows = Number(process.env.BENCH_VERSIONS_INGEST_ROWS ?? 60_000);
const ingestRounds = Number(process.env.BENCH_VERSIONS_ROUNDS ?? 3);
const beforeRef = process.env.BENCH_BEFORE_REF ?? '1b892f5';
const afterRef = process.env.BENCH_AFTER_REF;
const batchSize = 1_000;
const clientCounts = [1, 4];
const fixtureStation = 'year-1';



/**
 * The station-year, one reading a minute with every field, written by one insert ... generate_series (the
 * portable engine's statement triggers build its rollups; timescale's are refreshed after), recorded_at
 * its own timestamp where the column exists; then the station's marks, and ANALYZE.
 */
async function loadFixture(databaseUrl: string, engine: Engine): Promise<{ seconds: number; versioned: boolean }> {
  await stationsWithKeys(databaseUrl, [fixtureStation]);
  return withClient(databaseUrl, async (client) => {
    const versioned = (await client.query(`select 1 from information_schema.columns where table_name = 'readings' and column_name = 'recorded_at'`)).rowCount === 1;
    const started = performance.now();
    await client.query(`
      insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index,
                            quality_flag, firmware_version, module_data${versioned ? ', recorded_at' : ''})
      select $1, t,
        round((10 + 10 * sin(2 * pi() * i / 525600.0) + 5 * sin(2 * pi() * i / 1440.0) + ((i * 7919) % 100) / 100.0)::numeric, 2),
        round((60 + 20 * cos(2 * pi() * i / 1440.0))::numeric, 1), round((1005 + 8 * sin(i / 7200.0))::numeric, 1),
        210, 3.1, pm, 12.4, 420 + i % 30, 0.3, 2.5, case when pm > 44 then 'suspect' else 'ok' end, '2.4.1', null${versioned ? ', t' : ''}
      from generate_series(0::bigint, $2::bigint - 1) as i,
        lateral (select $3::timestamptz + i * interval '1 minute' as t, round((5 + ((i * 104729) % 400) / 10.0)::numeric, 1) as pm) v
      order by i`, [fixtureStation, fixtureMinutes, new Date(yearStart).toISOString()]);
    // What the readings store does in its transaction, for rows that bypassed it (as bench/dataset).
    await client.query(`insert into station_latest (station_id, ts, first_ts) select station_id, max(ts), min(ts) from readings where station_id = $1 group by 1
      on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts), first_ts = least(station_latest.first_ts, excluded.first_ts),
        version = excluded.version`, [fixtureStation]);
    if (engine === 'timescale') await client.query('call envmon_refresh_rollups()');
    await client.query('vacuum (analyze) readings');
    return { seconds: (performance.now() - started) / 1000, versioned };
  });
}

/** The columnstore policy's job on readings (timescale): paused, so that only runColumnstoreJob compresses. */
async function pauseColumnstoreJob(databaseUrl: string): Promise<number> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ job_id: number }>(`select job_id from timescaledb_information.jobs
      where hypertable_name = 'readings' and proc_name in ('policy_compression', 'policy_columnstore')`);
    if (rows.length !== 1) throw new Error(`expected one columnstore policy on readings, found ${rows.length}`);
    await client.query(`select alter_job($1, scheduled => false)`, [rows[0]!.job_id]);
    return rows[0]!.job_id;
  });
}

/** Runs the columnstore policy's job as its schedule would (chunks older than 30 days); returns the chunks compressed / all. */
async function runColumnstoreJob(databaseUrl: string, job: number): Promise<{ seconds: number; compressed: number; chunks: number }> {
  return withClient(databaseUrl, async (client) => {
    const started = performance.now();
    await client.query(`call run_job($1)`, [job]);
    const seconds = (performance.now() - started) / 1000;
    await client.query('analyze readings');
    const { rows } = await client.query<{ compressed: number; chunks: number }>(`select (count(*) filter (where is_compressed))::int as compressed, count(*)::int as chunks
      from timescaledb_information.chunks where hypertable_name = 'readings'`);
    return { seconds, ...rows[0]! };
  });
}

type Storage = { total: number; table: number; indexes: number; toast: number; chunks: number };

/** The readings table's bytes (its heap, indexes and TOAST; on timescale every chunk's, compressed or not). */
async function storageOf(databaseUrl: string, engine: Engine): Promise<Storage> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<Storage>(engine === 'timescale'
      ? `select total_bytes::float8 as total, table_bytes::float8 as "table", index_bytes::float8 as indexes, toast_bytes::float8 as toast,
           (select count(*)::int from show_chunks('readings')) as chunks from hypertable_detailed_size('readings')`
      : `select pg_total_relation_size('readings')::float8 as total, pg_relation_size('readings')::float8 as "table", pg_indexes_size('readings')::float8 as indexes,
           (pg_total_relation_size('readings') - pg_relation_size('readings') - pg_indexes_size('readings'))::float8 as toast, 0 as chunks`);
    return rows[0]!;
  });
}

type Fetched = { ms: number; bytes: number; lines: number; memento: string | undefined };

/** GETs `url` as a plain client does (no Accept-Encoding: curl's default, identity), reading every byte. */
function getAll(url: string): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http.get(url, { headers: { 'Accept-Encoding': 'identity' } }, (response) => {
      let bytes = 0;
      let lines = 0;
      const parts: Buffer[] = [];
      response.on('data', (piece: Buffer) => {
        bytes += piece.length;
        for (let at = piece.indexOf(10); at !== -1; at = piece.indexOf(10, at + 1)) lines++;
        if (response.statusCode !== 200) parts.push(piece);
      });
      response.on('end', () => {
        if (response.statusCode !== 200) reject(new Error(`${url}: ${response.statusCode} ${Buffer.concat(parts).toString()}`));
        else resolve({ ms: performance.now() - started, bytes, lines, memento: response.headers['memento-datetime'] as string | undefined });
      });
      response.on('error', reject);
    }).on('error', reject);
  });
}

/**
 * Medians (ms) of `runs` rounds of every timed function, after two unmeasured rounds; within a round they
 * run one after the other, in an order turned by one each round so that none always goes first.
 */
async function interleavedMedians<K extends string>(timed: Record<K, () => Promise<number>>): Promise<Record<K, number>> {
  const keys = Object.keys(timed) as K[];
  const times = new Map<K, number[]>(keys.map((k) => [k, []]));
  for (let round = -2; round < runs; round++) {
    for (let i = 0; i < keys.length; i++) {
      const key = keys[(i + Math.max(round, 0)) % keys.length]!;
      const ms = await timed[key]();
      if (round >= 0) times.get(key)!.push(ms);
    }
  }
  return Object.fromEntries(keys.map((k) => [k, percentile(times.get(k)!.sort((a, b) => a - b), 50)])) as Record<K, number>;
}

/** A row of the printed table: a figure, the limit it is measured against in the same run, their ratio. */
type Line = { engine: string; what: string; value: string; limit: string; ratio: number; note?: string };

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
const ms = (n: number) => `${fmt(n, n < 100 ? 1 : 0)} ms`;
const round2 = (n: number) => Math.round(n * 100) / 100;

/** Parts 2 and 3 on the after database, in its present state (`state`: as written, or compressed). */
async function measureReads(engine: Engine, state: string, databaseUrl: string, after: Checkout, results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const serve = await startServe(databaseUrl, {}, after.bin);
  const uncached = await startServe(databaseUrl, { AGGREGATE_CACHE_MB: '0' }, after.bin);
  const label = `${engine}${state ? ` (${state})` : ''}`;
  try {
    // Yesterday, to the millisecond: every reading of the fixture (recorded in 2025) is in the archive then.
    const asOf = new Date(Date.now() - 86_400_000).toISOString();
    const station = `station=${fixtureStation}`;
    for (const output of ['csv', 'parquet'] as const) {
      const base = `${serve.url}/api/v1/data/download/?${station}${output === 'parquet' ? '&output=parquet' : ''}`;
      const seen: Record<'live' | 'as_of', Fetched | undefined> = { live: undefined, as_of: undefined };
      const timed = (key: 'live' | 'as_of', url: string) => async () => {
        const fetched = await getAll(url);
        seen[key] = fetched;
        return fetched.ms;
      };
      const medians = await interleavedMedians({ live: timed('live', base), as_of: timed('as_of', `${base}&as_of=${encodeURIComponent(asOf)}`) });
      const live = seen.live!;
      const past = seen.as_of!;
      // The same readings either way: the CSV's lines (its citation line names the instant), the Parquet's size.
      if (past.memento === undefined || live.memento !== undefined) throw new Error(`download ${output}: as_of not answered as a memento`);
      if (output === 'csv' ? past.lines !== live.lines || live.lines < fixtureMinutes : Math.abs(past.bytes - live.bytes) > live.bytes * 0.01) {
        throw new Error(`download ${output}: as_of gave ${past.bytes} bytes, ${past.lines} lines; live ${live.bytes} bytes, ${live.lines} lines`);
      }
      const ratio = round2(medians.as_of / medians.live);
      results.push({
        engine, state, part: 'download', output, runs, readings: fixtureMinutes, mb: +(live.bytes / 1e6).toFixed(1), as_of: asOf,
        live_ms: +medians.live.toFixed(1), as_of_ms: +medians.as_of.toFixed(1), ratio, target: 1.5,
        live_rows_per_s: Math.round(fixtureMinutes / (medians.live / 1000)), as_of_rows_per_s: Math.round(fixtureMinutes / (medians.as_of / 1000)),
      });
      lines.push({ engine: label, what: `download ${output} as_of (${mb(live.bytes)})`, value: ms(medians.as_of), limit: `live ${ms(medians.live)}`, ratio, note: `target <= 1.5: ${ratio <= 1.5 ? 'met' : 'MISSED'}` });
      console.log(`${label}: download ${output} ${mb(live.bytes)}   live ${ms(medians.live)}   as_of ${ms(medians.as_of)}   as_of/live ${ratio.toFixed(2)}`);
    }

    await withClient(databaseUrl, async (client) => {
      for (const period of ['day', 'hour'] as const) {
        const base = `/api/v1/data/aggregate/?${station}&period=${period}`;
        let periods = 0;
        const timed = (url: string) => async () => (await getAll(url)).ms;
        const medians = await interleavedMedians({
          live: timed(`${serve.url}${base}`),
          live_uncached: timed(`${uncached.url}${base}`),
          as_of: async () => {
            const fetched = await getAll(`${serve.url}${base}&as_of=${encodeURIComponent(asOf)}`);
            if (fetched.memento === undefined) throw new Error('aggregate: as_of not answered as a memento');
            return fetched.ms;
          },
          // The limit of an as_of aggregate: a GROUP BY over the station's readings with the statistics its
          // default columns give (count, mean, min, max, sd), on one connection, every row read.
          raw_group_by: async () => {
            const started = performance.now();
            const { rowCount } = await client.query(`
              select date_trunc($2, ts, 'UTC') as period_start, count(*),
                avg(temperature_c), min(temperature_c), max(temperature_c), avg(humidity_rh), avg(pressure_hpa), avg(pm2_5),
                stddev_samp(temperature_c), stddev_samp(humidity_rh), stddev_samp(pressure_hpa), stddev_samp(pm2_5)
              from readings where station_id = $1 group by 1 order by 1`, [fixtureStation, period]);
            periods = rowCount ?? 0;
            return performance.now() - started;
          },
        });
        const row = {
          engine, state, part: 'aggregate', period, periods, runs, readings: fixtureMinutes, as_of: asOf,
          live_ms: +medians.live.toFixed(2), live_uncached_ms: +medians.live_uncached.toFixed(2), as_of_ms: +medians.as_of.toFixed(1), raw_group_by_ms: +medians.raw_group_by.toFixed(1),
          as_of_vs_live: round2(medians.as_of / medians.live), as_of_vs_live_uncached: round2(medians.as_of / medians.live_uncached),
          as_of_vs_raw_group_by: round2(medians.as_of / medians.raw_group_by),
        };
        results.push(row);
        lines.push(
          { engine: label, what: `aggregate ${period} as_of (${fmt(periods)} periods)`, value: ms(medians.as_of), limit: `raw GROUP BY ${ms(medians.raw_group_by)}`, ratio: row.as_of_vs_raw_group_by },
          { engine: label, what: `aggregate ${period} as_of`, value: ms(medians.as_of), limit: `live ${ms(medians.live)}`, ratio: row.as_of_vs_live, note: 'live as served (aggregate cache)' },
          { engine: label, what: `aggregate ${period} as_of`, value: ms(medians.as_of), limit: `live ${ms(medians.live_uncached)}`, ratio: row.as_of_vs_live_uncached, note: 'live with AGGREGATE_CACHE_MB=0 (rollups)' },
        );
        console.log(`${label}: aggregate ${period} (${fmt(periods)} periods)   live ${ms(medians.live)} (cache off ${ms(medians.live_uncached)})   as_of ${ms(medians.as_of)}   raw GROUP BY ${ms(medians.raw_group_by)}   as_of/raw ${row.as_of_vs_raw_group_by.toFixed(2)}`);
      }
    });
  } finally {
    await uncached.stop();
    await serve.stop();
  }
}

type Side = { name: 'before' | 'after'; checkout: Checkout; databaseUrl: string; serve?: Serve; keys: string[] };

/** One run of part 1 on `side`: `clients` stations posting batches of 1,000 at once; readings/s. */
async function ingestRun(side: Side, stations: string[], clients: number, perClient: number, start: number): Promise<number> {
  // Bytes, as a station holds them (as bench/ingest).
  const bodies = stations.slice(0, clients).map((station) =>
    chunk(benchRows(perClient, start), batchSize).map((readings) => Buffer.from(JSON.stringify({ station_id: station, readings }))));
  const started = performance.now();
  await Promise.all(bodies.map(async (batches, c) => {
    for (const body of batches) {
      const response = await fetch(`${side.serve!.url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${side.keys[c]}` }, body,
      });
      const result = (await response.json()) as { accepted: number };
      if (response.status !== 201 || result.accepted !== batchSize) throw new Error(`${side.name} ingest failed: ${response.status} ${JSON.stringify(result)}`);
    }
  }));
  return (perClient * clients) / ((performance.now() - started) / 1000);
}

/** Parts 1 and 5: before and after, each against raw COPY into its own database, rounds in alternating order. */
async function measureIngest(engine: Engine, sides: Side[], results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const stations = Array.from({ length: Math.max(...clientCounts) }, (_, c) => `ingest-${c}`);
  for (const side of sides) {
    side.keys = await stationsWithKeys(side.databaseUrl, stations);
    side.serve = await startServe(side.databaseUrl, {}, side.checkout.bin);
  }
  try {
    // As bench/ingest: old timestamps (from 2020), the same for both sides.
    let cursor = Date.parse('2020-01-01T00:00:00Z');
    const runsOf = new Map<string, { http: number[]; copy: number[]; ratio: number[] }>();
    for (let round = 0; round < ingestRounds; round++) {
      for (const clients of clientCounts) {
        const perClient = Math.floor(ingestRows / clients / batchSize) * batchSize;
        for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
          const copy = await copyReadings(side.databaseUrl, 'copy-limit', benchRows(perClient * clients, cursor));
          const rate = await ingestRun(side, stations, clients, perClient, cursor);
          const key = `${side.name}/${clients}`;
          const seen = runsOf.get(key) ?? { http: [], copy: [], ratio: [] };
          seen.http.push(rate);
          seen.copy.push(copy);
          seen.ratio.push(rate / copy);
          runsOf.set(key, seen);
          console.log(`${engine}: ingest round ${round + 1} ${side.name.padEnd(6)} x${clients}  http ${fmt(rate).padStart(7)} rows/s   raw COPY ${fmt(copy).padStart(7)} rows/s   ratio ${(rate / copy).toFixed(2)}`);
        }
        cursor += perClient * 60_000;
      }
    }
    for (const clients of clientCounts) {
      const ratios: Record<string, number> = {};
      for (const side of sides) {
        const seen = runsOf.get(`${side.name}/${clients}`)!;
        // The round whose ratio is the median: its HTTP rate and its COPY limit, which were measured together.
        const middle = seen.ratio.indexOf(percentile([...seen.ratio].sort((a, b) => a - b), 50));
        const row = {
          engine, part: 'ingest', version: side.name, commit: side.checkout.label, batch: batchSize, clients, rounds: ingestRounds,
          readings_per_run: Math.floor(ingestRows / clients / batchSize) * batchSize * clients,
          http_rows_per_s: Math.round(seen.http[middle]!), copy_rows_per_s: Math.round(seen.copy[middle]!), ratio: round2(seen.ratio[middle]!),
          rounds_http_rows_per_s: seen.http.map(Math.round), rounds_copy_rows_per_s: seen.copy.map(Math.round), rounds_ratio: seen.ratio.map(round2),
        };
        ratios[side.name] = row.ratio;
        results.push(row);
        lines.push({ engine, what: `ingest 1,000 x${clients} ${side.name} (${side.checkout.label})`, value: `${fmt(row.http_rows_per_s)} rows/s`, limit: `raw COPY ${fmt(row.copy_rows_per_s)} rows/s`, ratio: row.ratio, note: `the median round of ${ingestRounds} (ratios ${row.rounds_ratio.map((r) => r.toFixed(2)).join(', ')})` });
      }
      const change = round2(ratios.after! / ratios.before!);
      results.push({ engine, part: 'ingest', clients, after_ratio_vs_before_ratio: change });
      lines.push({ engine, what: `ingest 1,000 x${clients} after vs before`, value: `after ${ratios.after!.toFixed(2)} of COPY`, limit: `before ${ratios.before!.toFixed(2)} of COPY`, ratio: change });
    }
  } finally {
    for (const side of sides) await side.serve?.stop();
  }
}

/** Every part on one engine: a database migrated by each checkout, dropped afterwards. */
async function measureEngine(server: TestServer, engine: Engine, before: Checkout, after: Checkout, results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const sides: Side[] = [];
  try {
    for (const [name, checkout] of [['before', before], ['after', after]] as const) {
      const databaseUrl = await server.createEmptyDatabase();
      sides.push({ name, checkout, databaseUrl, keys: [] });
      await migrateWith(checkout, databaseUrl, engine);
    }
    const jobs = engine === 'timescale' ? await Promise.all(sides.map((side) => pauseColumnstoreJob(side.databaseUrl))) : [];

    // Part 4, as written: the same fixture before (no recorded_at) and after.
    const written: Storage[] = [];
    for (const side of sides) {
      const loaded = await loadFixture(side.databaseUrl, engine);
      if (loaded.versioned !== (side.name === 'after')) throw new Error(`${side.name}: readings.recorded_at ${loaded.versioned ? 'present' : 'absent'}`);
      written.push(await storageOf(side.databaseUrl, engine));
      console.log(`${engine}: ${side.name} fixture written in ${loaded.seconds.toFixed(1)} s (rollups and vacuum included): ${mb(written.at(-1)!.total)}`);
    }
    const afterSide = sides[1]!;
    const storageLine = (state: string, sizes: Storage[], note: string) => {
      const [without, withColumn] = sizes as [Storage, Storage];
      const ratio = round2(withColumn.total / without.total);
      results.push({
        engine, part: 'storage', state, readings: fixtureMinutes, note,
        without_recorded_at: without, with_recorded_at: withColumn,
        bytes_per_reading_without: +(without.total / fixtureMinutes).toFixed(1), bytes_per_reading_with: +(withColumn.total / fixtureMinutes).toFixed(1), ratio,
      });
      lines.push({ engine, what: `storage ${state} with recorded_at`, value: `${mb(withColumn.total)} (${(withColumn.total / fixtureMinutes).toFixed(1)} B/reading)`, limit: `without ${mb(without.total)} (${(without.total / fixtureMinutes).toFixed(1)} B/reading)`, ratio, note });
      console.log(`${engine}: storage ${state}   with recorded_at ${mb(withColumn.total)} (heap ${mb(withColumn.table)}, indexes ${mb(withColumn.indexes)}, toast ${mb(withColumn.toast)})   without ${mb(without.total)} (heap ${mb(without.table)}, indexes ${mb(without.indexes)}, toast ${mb(without.toast)})   ratio ${ratio.toFixed(2)}`);
    };
    storageLine(engine === 'timescale' ? 'uncompressed' : 'table', written, engine === 'timescale' ? 'hypertable_detailed_size(readings), every chunk' : 'pg_total_relation_size(readings)');

    // Parts 2 and 3; on timescale as written, then once the columnstore policy's job has compressed the chunks.
    await measureReads(engine, engine === 'timescale' ? 'rowstore' : '', afterSide.databaseUrl, after, results, lines);
    if (engine === 'timescale') {
      const compressed: Storage[] = [];
      for (const [i, side] of sides.entries()) {
        const job = await runColumnstoreJob(side.databaseUrl, jobs[i]!);
        if (job.compressed !== job.chunks) throw new Error(`${side.name}: ${job.compressed} of ${job.chunks} chunks compressed`);
        compressed.push(await storageOf(side.databaseUrl, engine));
        console.log(`${engine}: ${side.name} columnstore job compressed ${job.chunks} chunks in ${job.seconds.toFixed(1)} s`);
      }
      storageLine('compressed', compressed, `hypertable_detailed_size(readings) after call run_job(<columnstore policy>): ${compressed[0]!.chunks} chunks`);
      await measureReads(engine, 'columnstore', afterSide.databaseUrl, after, results, lines);
    }

    await measureIngest(engine, sides, results, lines);
  } finally {
    for (const side of sides) await server.dropDatabase(side.databaseUrl);
  }
}

async function main() {
  const results: Record<string, unknown>[] = [];
  const lines: Line[] = [];
  const before = checkoutOf(beforeRef, 'versions');
  let after: Checkout | undefined;
  try {
    after = afterRef ? checkoutOf(afterRef, 'versions') : thisCheckout();
    const server = await openServer();
    try {
      console.log(`before: ${before.label}   after: ${after.label}   station-year: ${fmt(fixtureMinutes)} readings   runs: ${runs}   ingest: ${fmt(ingestRows)} readings x ${ingestRounds} rounds`);
      for (const engine of server.engines) await measureEngine(server, engine, before, after, results, lines);
    } finally {
      await server.close();
    }
  } finally {
    after?.remove();
    before.remove();
  }
  saveResults('versions', results);

  const widths = { engine: 0, what: 0, value: 0, limit: 0 };
  for (const line of lines) for (const key of Object.keys(widths) as (keyof typeof widths)[]) widths[key] = Math.max(widths[key], line[key].length);
  console.log(`\nversions: before ${before.label}, after ${after!.label}; ratio = value / limit, both measured in this run`);
  for (const line of lines) {
    console.log(`${line.engine.padEnd(widths.engine)}  ${line.what.padEnd(widths.what)}  ${line.value.padStart(widths.value)}  ${line.limit.padEnd(widths.limit)}  ${line.ratio.toFixed(2).padStart(5)}${line.note ? `  ${line.note}` : ''}`);
  }
}

await main();
