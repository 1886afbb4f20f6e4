// bench/paths: every main path against its limit, measured in the same run on each engine, with
// clients that do what real ones do (fetch with its default Accept-Encoding, every byte read, JSON
// parsed). A station-year of one-minute readings is posted through HTTP in 10,000-reading batches into
// a fresh database, then read back.
//
//   ingest, 1 client          / raw COPY of the same rows on one connection         target >= 0.5
//   ingest, 4 clients         / raw COPY of the same rows                          target >= 0.75
//   daily aggregate           / raw GROUP BY of the same statistics (speed-up)     target >= 50x
//   hourly aggregate          / raw GROUP BY (speed-up)                            target >= 10x
//   CSV download (identity, gzip, br) / psql \copy of the same query to /dev/null target >= 0.9
//   /data/latest/, 16 keep-alive clients / the discovery document, same load      target >= 0.6
//
// BENCH_PATHS_ROWS (525600) sets the rows of the history; BENCH_PATHS_FORMATS (json,ndjson,csv) the
// body formats of the ingest runs; BENCH_PATHS_ONLY (ingest,aggregate,download,latest) the sections
// (the history is always posted, as JSON by one client).
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import pg from 'pg';
import { createSlonikPool } from '../src/db/pool.js';
import { downloadStatement } from '../src/readings/download.js';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { benchRows, chunk, copyReadings, eachEngine, fmt, medianMs, startServe, type BenchRow } from './lib.js';

const historyRows = Number(process.env.BENCH_PATHS_ROWS ?? 525_600);
const formats = (process.env.BENCH_PATHS_FORMATS ?? 'json,ndjson,csv').split(',') as BodyFormat[];
const readRuns = Number(process.env.BENCH_PATHS_RUNS ?? 30);
const loadSeconds = Number(process.env.BENCH_PATHS_SECONDS ?? 8);
const sections = new Set((process.env.BENCH_PATHS_ONLY ?? 'ingest,aggregate,download,latest').split(','));
const batchSize = 10_000;
const start = Date.parse('2025-01-01T00:00:00Z');

type BodyFormat = 'json' | 'ndjson' | 'csv';
const contentTypes: Record<BodyFormat, string> = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' };
const csvColumns = ['timestamp', 'temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index', 'firmware_version'] as const;

/** A batch as the station would send it in each format (the CSV carries no module_data column). */
function body(format: BodyFormat, stationId: string, readings: BenchRow[]): string {
  if (format === 'json') return JSON.stringify({ station_id: stationId, readings });
  if (format === 'ndjson') return readings.map((r) => JSON.stringify(r)).join('\n') + '\n';
  return [csvColumns.join(','), ...readings.map((r) => csvColumns.map((c) => r[c]).join(','))].join('\n') + '\n';
}

async function post(url: string, key: string, format: BodyFormat, text: string, expected: number): Promise<void> {
  const response = await fetch(`${url}/api/v1/ingest/environmental/`, {
    method: 'POST', headers: { 'Content-Type': contentTypes[format], Authorization: `Token ${key}` }, body: text,
  });
  const result = (await response.json()) as { accepted: number };
  if (response.status !== 201 || result.accepted !== expected) throw new Error(`ingest failed: ${response.status} ${JSON.stringify(result)}`);
}

/** Rows per second of `clients` stations each posting its share of `rows` readings, one batch after another. */
async function ingestRate(url: string, stations: { id: string; key: string }[], format: BodyFormat, rows: number, from: number): Promise<number> {
  const perClient = Math.floor(rows / stations.length / batchSize) * batchSize;
  const bodies = stations.map((s, c) => chunk(benchRows(perClient, from + c * perClient * 60_000), batchSize).map((b) => body(format, s.id, b)));
  const started = performance.now();
  await Promise.all(stations.map(async (s, c) => {
    for (const text of bodies[c]!) await post(url, s.key, format, text, batchSize);
  }));
  return (perClient * stations.length) / ((performance.now() - started) / 1000);
}

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
}

/** psql's `\copy (query) to stdout` with its output going to /dev/null: the limit of a CSV download. */
function psqlCopy(databaseUrl: string, statement: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sink = openSync('/dev/null', 'w');
    const started = performance.now();
    const child = spawn('psql', [databaseUrl, '-X', '-q', '-c', statement.replace(/^copy /, '\\copy ')], { stdio: ['ignore', sink, 'inherit'] });
    child.once('exit', (code) => {
      closeSync(sink);
      if (code === 0) resolve((performance.now() - started) / 1000);
      else reject(new Error(`psql exited ${code}`));
    });
  });
}

/** Seconds to fetch and read a whole download with the given Accept-Encoding, decoding it as a client does. */
async function download(url: string, encoding: string): Promise<{ seconds: number; bytes: number }> {
  const started = performance.now();
  const response = await fetch(url, { headers: { 'Accept-Encoding': encoding } });
  if (response.status !== 200) throw new Error(`download: ${response.status}`);
  let bytes = 0;
  // fetch decodes gzip and br itself: every byte is read in the form the client uses.
  for await (const piece of response.body!) bytes += piece.length;
  return { seconds: (performance.now() - started) / 1000, bytes };
}

async function requestsPerSecond(url: string): Promise<{ rps: number; p50: number; errors: number }> {
  const run = await autocannon({ url, connections: 16, duration: loadSeconds });
  return { rps: run.requests.average, p50: run.latency.p50, errors: run.errors + run.non2xx };
}

const ratio = (value: number, digits = 2) => +value.toFixed(digits);

await eachEngine('paths', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const report = (row: Record<string, unknown>, line: string) => {
    results.push({ engine, ...row });
    console.log(`${engine.padEnd(9)} ${line}`);
  };
  const pool = await createSlonikPool(databaseUrl, { poolSize: 2, statementTimeoutMs: 600_000 });
  const stations: { id: string; key: string }[] = [];
  for (let s = 0; s < 5 * formats.length; s++) {
    const id = `paths-${s}`;
    await upsertStation(pool, { station_id: id, name: id, location_name: 'Bench', altitude_m: 210, latitude: 45, longitude: 6, status: 'active' });
    stations.push({ id, key: (await issueKey(pool, id)).key });
  }
  await pool.end();
  const serve = await startServe(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Ingest: the history of station 0 by one client, then the same number of rows by four.
    const copyRate = await copyReadings(databaseUrl, 'paths-copy', benchRows(historyRows, start));
    // Each run posts to stations of its own, so that every reading is new; station 0 keeps the JSON history.
    let next = 0;
    const take = (n: number) => stations.slice(next, (next += n));
    for (const format of sections.has('ingest') ? formats : ['json' as const]) {
      if (!sections.has('ingest') && format !== 'json') break;
      const one = await ingestRate(serve.url, take(1), format, historyRows, start);
      report({ path: `ingest_${format}_1_client`, rows_per_s: Math.round(one), limit_rows_per_s: Math.round(copyRate), ratio: ratio(one / copyRate) },
        `ingest ${format.padEnd(6)} 1 client   ${fmt(one).padStart(8)} rows/s   raw COPY ${fmt(copyRate).padStart(8)} rows/s   ratio ${(one / copyRate).toFixed(2)}`);
      const four = await ingestRate(serve.url, take(4), format, historyRows, start);
      report({ path: `ingest_${format}_4_clients`, rows_per_s: Math.round(four), limit_rows_per_s: Math.round(copyRate), ratio: ratio(four / copyRate) },
        `ingest ${format.padEnd(6)} 4 clients  ${fmt(four).padStart(8)} rows/s   raw COPY ${fmt(copyRate).padStart(8)} rows/s   ratio ${(four / copyRate).toFixed(2)}`);
    }
    await client.query('analyze');
    const station = stations[0]!.id;

    // Aggregates: the API (JSON read and parsed) against a GROUP BY of the same statistics over the readings,
    // as asked again (served from memory while the station is unchanged) and computed each time (a server
    // with AGGREGATE_CACHE_MB=0), as a first request is.
    const computing = sections.has('aggregate') ? await startServe(databaseUrl, { AGGREGATE_CACHE_MB: '0' }) : null;
    try {
      for (const period of sections.has('aggregate') ? (['day', 'hour'] as const) : []) {
        const raw = await medianMs(Math.ceil(readRuns / 4), async () => {
          await client.query(
            `select date_trunc($2, ts, 'UTC') as period_start, count(*), avg(temperature_c), min(temperature_c), max(temperature_c),
               avg(humidity_rh), avg(pressure_hpa), avg(pm2_5) from readings where station_id = $1 group by 1 order by 1`,
            [station, period],
          );
        });
        for (const [how, origin] of [['asked again', serve.url], ['computed', computing!.url]] as const) {
          const api = await medianMs(readRuns, async () => {
            const response = await fetch(`${origin}/api/v1/data/aggregate/?station=${station}&period=${period}`);
            const parsed = (await response.json()) as { count: number };
            if (response.status !== 200 || parsed.count === 0) throw new Error(`aggregate ${period}: ${response.status}`);
          });
          report({ path: `aggregate_${period}${how === 'computed' ? '_computed' : ''}`, api_p50_ms: ratio(api), limit_p50_ms: ratio(raw), speedup: ratio(raw / api, 1) },
            `aggregate ${period.padEnd(4)} ${how.padEnd(11)} API p50 ${fmt(api, 2).padStart(7)} ms   raw GROUP BY p50 ${fmt(raw, 1).padStart(7)} ms   speed-up ${(raw / api).toFixed(1)}x`);
        }
      }
    } finally {
      await computing?.stop();
    }

    // Downloads: the station's history, against psql writing the same COPY to /dev/null.
    const statement = downloadStatement(client, { stationIds: [station], withStation: false });
    let psql = Infinity;
    for (let run = 0; run < (sections.has('download') ? 3 : 0); run++) psql = Math.min(psql, await psqlCopy(databaseUrl, statement));
    for (const encoding of sections.has('download') ? ['identity', 'gzip', 'br'] : []) {
      let best = { seconds: Infinity, bytes: 0 };
      for (let run = 0; run < 3; run++) {
        const got = await download(`${serve.url}/api/v1/data/download/?station=${station}`, encoding);
        if (got.seconds < best.seconds) best = got;
      }
      report({ path: `download_${encoding}`, seconds: ratio(best.seconds, 3), limit_seconds: ratio(psql, 3), ratio: ratio(psql / best.seconds), mb: ratio(best.bytes / 1e6, 1), server_peak_rss_mb: Math.round(peakRssMb(serve.child.pid!)) },
        `download ${encoding.padEnd(8)}   ${(best.seconds * 1000).toFixed(0).padStart(5)} ms   psql \\copy ${(psql * 1000).toFixed(0).padStart(5)} ms   ratio ${(psql / best.seconds).toFixed(2)}   server peak RSS ${Math.round(peakRssMb(serve.child.pid!))} MB`);
    }

    // Latest under 16 keep-alive clients, against the discovery document (no database) under the same load.
    if (!sections.has('latest')) return results;
    const discovery = await requestsPerSecond(`${serve.url}/api/v1/`);
    const latest = await requestsPerSecond(`${serve.url}/api/v1/data/latest/?station=${station}`);
    report({ path: 'latest_16_clients', rps: Math.round(latest.rps), p50_ms: latest.p50, limit_rps: Math.round(discovery.rps), ratio: ratio(latest.rps / discovery.rps), errors: latest.errors + discovery.errors },
      `latest x16         ${fmt(latest.rps).padStart(6)} req/s p50 ${latest.p50} ms   discovery ${fmt(discovery.rps).padStart(6)} req/s   ratio ${(latest.rps / discovery.rps).toFixed(2)}   errors ${latest.errors + discovery.errors}`);
  } finally {
    await client.end();
    await serve.stop();
  }
  return results;
});
