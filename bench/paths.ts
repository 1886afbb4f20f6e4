// bench/paths: every main path against its limit, measured in the same run on each engine, with
// clients that do what real ones do (fetch with its default Accept-Encoding, every byte read, JSON
// parsed). A station-year of one-minute readings is posted through HTTP in 10,000-reading batches into
// a fresh database, then read back.
//
//   ingest, 1 client          / raw COPY of the same rows on one connection         target >= 0.5
//   ingest, 4 clients         / raw COPY of the same rows                          target >= 0.75
//     raw COPY as CSV; beside it, the ratio to a raw COPY in the binary format the service sends
//   daily aggregate           / raw GROUP BY of the same statistics (speed-up)     target >= 50x
//     (the faster of the planner's plan and one by the station's index)
//   hourly aggregate          / raw GROUP BY (speed-up)                            target >= 10x
//     each asked again, computed (no answer kept), and live (after each new reading of the station)
//   CSV download (identity, gzip, br) / psql \copy of the same query to /dev/null target >= 0.9
//   /data/latest/, 16 keep-alive clients / the discovery document, same load      target >= 0.6
//
// The machines these run on are shared and noisy: a limit measured a minute before its path can differ
// by half. So each limit is measured again in every round, right before the paths it limits, each ratio
// is taken within its round, and the figure is the median of the rounds' ratios (their range beside it).
//
// BENCH_PATHS_ROWS (525600) sets the rows of the history; BENCH_PATHS_FORMATS (json,ndjson,csv) the
// body formats of the ingest runs; BENCH_PATHS_ROUNDS (3) the rounds; BENCH_PATHS_ONLY
// (ingest,aggregate,download,latest) the sections (the history is always posted, as JSON by one client).
// BENCH_COMPARE_BIN names another checkout's bin/envmon.js: its service is started beside this one on the
// same database, and every ingest segment is posted to both, so that the two releases' ingest ratios come
// from the same run and the same limits.
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import pg from 'pg';
import { createSlonikPool } from '../src/db/pool.js';
import { copyStatement } from '../src/db/copyOut.js';
import { downloadQuery } from '../src/readings/export/download.js';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { benchRows, chunk, copyReadings, eachEngine, fmt, medianMs, startServe, type BenchRow } from './lib.js';

const historyRows = Number(process.env.BENCH_PATHS_ROWS ?? 525_600);
const formats = (process.env.BENCH_PATHS_FORMATS ?? 'json,ndjson,csv').split(',') as BodyFormat[];
const readRuns = Number(process.env.BENCH_PATHS_RUNS ?? 30);
const loadSeconds = Number(process.env.BENCH_PATHS_SECONDS ?? 4);
const rounds = Number(process.env.BENCH_PATHS_ROUNDS ?? 3);
const segmentRows = 80_000;
const ingestSegments = Number(process.env.BENCH_PATHS_SEGMENTS ?? 7);
const sections = new Set((process.env.BENCH_PATHS_ONLY ?? 'ingest,aggregate,download,latest').split(','));
const batchSize = 10_000;
const compareBin = process.env.BENCH_COMPARE_BIN;
const start = Date.parse('2025-01-01T00:00:00Z');

type BodyFormat = 'json' | 'ndjson' | 'csv';
const contentTypes: Record<BodyFormat, string> = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' };
const csvColumns = ['timestamp', 'temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index', 'firmware_version'] as const;

/**
 * A batch as the station would send it in each format (the CSV carries no module_data column), as bytes:
 * a station holds the bytes it sends. (Given a string, fetch would encode 1.5 MB again for every post,
 * on the two cores the service and the database share: a cost of this client, not of any station.)
 */
function body(format: BodyFormat, stationId: string, readings: BenchRow[]): Buffer {
  if (format === 'json') return Buffer.from(JSON.stringify({ station_id: stationId, readings }));
  if (format === 'ndjson') return Buffer.from(readings.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return Buffer.from([csvColumns.join(','), ...readings.map((r) => csvColumns.map((c) => r[c]).join(','))].join('\n') + '\n');
}

async function post(url: string, key: string, format: BodyFormat, text: Buffer, expected: number): Promise<void> {
  const response = await fetch(`${url}/api/v1/ingest/environmental/`, {
    method: 'POST', headers: { 'Content-Type': contentTypes[format], Authorization: `Token ${key}` }, body: text,
  });
  const result = (await response.json()) as { accepted: number };
  if (response.status !== 201 || result.accepted !== expected) throw new Error(`ingest failed: ${response.status} ${JSON.stringify(result)}`);
}

/** Rows per second of `clients` stations each posting its share of `rows` readings from `from`, one batch after another. */
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

/** The median of the rounds' ratios, with their range: what a figure is reported as. */
function spread(ratios: number[], digits = 2): { median: number; min: number; max: number; text: string } {
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  const text = `${median.toFixed(digits)} (${sorted[0]!.toFixed(digits)}-${sorted.at(-1)!.toFixed(digits)})`;
  return { median: ratio(median, digits), min: ratio(sorted[0]!, digits), max: ratio(sorted.at(-1)!, digits), text };
}

await eachEngine('paths', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const report = (row: Record<string, unknown>, line: string) => {
    results.push({ engine, ...row });
    console.log(`${engine.padEnd(9)} ${line}`);
  };
  const pool = await createSlonikPool(databaseUrl, { poolSize: 2, statementTimeoutMs: 600_000 });
  const stations: { id: string; key: string }[] = [];
  for (let s = 0; s < 1 + (compareBin ? 10 : 5) * (sections.has('ingest') ? formats.length : 0); s++) {
    const id = `paths-${s}`;
    await upsertStation(pool, { station_id: id, name: id, location_name: 'Bench', altitude_m: 210, latitude: 45, longitude: 6, status: 'active' });
    stations.push({ id, key: (await issueKey(pool, id)).key });
  }
  await pool.end();
  const serve = await startServe(databaseUrl);
  const compared = compareBin && sections.has('ingest') ? await startServe(databaseUrl, {}, compareBin) : null;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // The history the reads use: station 0's year, posted as JSON by one client.
    const station = stations[0]!.id;
    const history = await ingestRate(serve.url, stations.slice(0, 1), 'json', historyRows, start);
    console.log(`${engine.padEnd(9)} history: ${fmt(history)} rows/s posted`);
    // Ingest: a station-year and more, in segments of 80,000 readings; for each segment raw COPY of its rows,
    // then the same rows posted by one client, then by four (two batches each), to stations of their own
    // so that every reading is new. Segments are short (a second or two each), so that the limit and the
    // paths it limits see the machine alike; the figure is the ratio of the rates over all segments.
    let next = 1;
    const take = (n: number) => stations.slice(next, (next += n));
    for (const format of sections.has('ingest') ? formats : []) {
      const [copyStation, one, four] = [`paths-copy-${format}`, take(1), take(4)];
      const [otherOne, otherFour] = compared ? [take(1), take(4)] : [[], []];
      const seconds = { copy: 0, binary: 0, one: 0, four: 0, otherOne: 0, otherFour: 0 };
      const ratios = { one: [] as number[], four: [] as number[], otherOne: [] as number[], otherFour: [] as number[] };
      for (let segment = 0; segment < ingestSegments; segment++) {
        const from = start + segment * segmentRows * 60_000;
        const copy = segmentRows / (await copyReadings(databaseUrl, copyStation, benchRows(segmentRows, from)));
        // A station of its own: the CSV copy's rows, deleted just now, would slow its unique checks.
        seconds.binary += segmentRows / (await copyReadings(databaseUrl, `${copyStation}-binary`, benchRows(segmentRows, from), 'binary'));
        const oneSeconds = segmentRows / (await ingestRate(serve.url, one, format, segmentRows, from));
        const fourSeconds = segmentRows / (await ingestRate(serve.url, four, format, segmentRows, from));
        seconds.copy += copy;
        seconds.one += oneSeconds;
        seconds.four += fourSeconds;
        ratios.one.push(copy / oneSeconds);
        ratios.four.push(copy / fourSeconds);
        if (compared) {
          const otherOneSeconds = segmentRows / (await ingestRate(compared.url, otherOne, format, segmentRows, from));
          const otherFourSeconds = segmentRows / (await ingestRate(compared.url, otherFour, format, segmentRows, from));
          seconds.otherOne += otherOneSeconds;
          seconds.otherFour += otherFourSeconds;
          ratios.otherOne.push(copy / otherOneSeconds);
          ratios.otherFour.push(copy / otherFourSeconds);
        }
      }
      const rows = segmentRows * ingestSegments;
      const runs = [[1, 'one'], [4, 'four'], ...(compared ? [[1, 'otherOne'], [4, 'otherFour']] : [])] as const;
      for (const [clients, kind] of runs as readonly (readonly [number, keyof typeof ratios])[]) {
        const which = kind.startsWith('other') ? ' (compared)' : '';
        const rate = rows / seconds[kind];
        const limit = rows / seconds.copy;
        const binary = rows / seconds.binary;
        const range = spread(ratios[kind]);
        report({ path: `ingest_${format}_${clients}_client${clients > 1 ? 's' : ''}${which ? '_compared' : ''}`, rows_per_s: Math.round(rate), limit_rows_per_s: Math.round(limit), ratio: ratio(rate / limit), segment_ratio_min: range.min, segment_ratio_max: range.max, binary_copy_rows_per_s: Math.round(binary), ratio_to_binary_copy: ratio(rate / binary) },
          `ingest ${format.padEnd(6)} ${clients} client${clients > 1 ? 's' : ' '}${which}  ${fmt(rate).padStart(8)} rows/s   raw COPY ${fmt(limit).padStart(8)} rows/s   ratio ${(rate / limit).toFixed(2)} (segments ${range.min.toFixed(2)}-${range.max.toFixed(2)}; to binary COPY ${fmt(binary)} rows/s ${(rate / binary).toFixed(2)})`);
      }
    }
    // The limits' copies were deleted (millions of rows): vacuumed now, so that no autovacuum of them runs
    // beside the reads below, slowing their limits more than the paths.
    await client.query('vacuum analyze');

    // Aggregates: the API (JSON read and parsed) against a GROUP BY of the same statistics over the readings,
    // as asked again (served from memory while the station is unchanged), computed each time (a server
    // with AGGREGATE_CACHE_MB=0), as a first request is, and live: asked again after each new reading of
    // the station (posted now, unmeasured), so made again from its kept part and its current month.
    const computing = sections.has('aggregate') ? await startServe(databaseUrl, { AGGREGATE_CACHE_MB: '0' }) : null;
    let live = 0;
    const postLive = () => post(serve.url, stations[0]!.key, 'json', body('json', station, benchRows(1, Date.now() - 1000 + (live++ % 1000))), 1);
    const modes = [['asked again', serve.url], ['computed', computing?.url ?? ''], ['live', serve.url]] as const;
    try {
      for (const period of sections.has('aggregate') ? (['day', 'hour'] as const) : []) {
        const speedups = { 'asked again': [] as number[], computed: [] as number[], live: [] as number[] };
        const times = { raw: [] as number[], 'asked again': [] as number[], computed: [] as number[], live: [] as number[] };
        const rawSql = `select date_trunc($2, ts, 'UTC') as period_start, count(*), avg(temperature_c), min(temperature_c), max(temperature_c),
          avg(humidity_rh), avg(pressure_hpa), avg(pm2_5) from readings where station_id = $1 group by 1 order by 1`;
        // The limit is the faster of two plans: the planner's own (which may scan the whole table: the station
        // holds a sizeable share of it) and one reading the station's rows by their index. Both plans are named.
        const scans = [['planner', ''], ['by index', 'set local enable_seqscan = off']] as const;
        const rawMs = async (setting: string) => {
          await client.query('begin');
          try {
            if (setting) await client.query(setting);
            return await medianMs(Math.ceil(readRuns / 4), async () => void (await client.query(rawSql, [station, period])));
          } finally {
            await client.query('commit');
          }
        };
        for (const [name, setting] of scans) {
          await client.query('begin');
          if (setting) await client.query(setting);
          const plan = (await client.query(`explain ${rawSql}`, [station, period])).rows.map((r: Record<string, string>) => r['QUERY PLAN']!);
          await client.query('commit');
          console.log(`${engine.padEnd(9)} raw GROUP BY ${period} (${name}): ${plan.filter((line) => /Scan|Aggregate|Sort|Append/.test(line)).map((line) => line.trim().replace(/^->\s*/, '').replace(/\s+\(cost.*$/, '')).slice(0, 4).join(' < ')}`);
        }
        for (let round = 0; round < rounds; round++) {
          const raw = Math.min(await rawMs(scans[0][1]), await rawMs(scans[1][1]));
          times.raw.push(raw);
          for (const [how, origin] of modes) {
            const api = await medianMs(readRuns, async () => {
              const response = await fetch(`${origin}/api/v1/data/aggregate/?station=${station}&period=${period}`);
              const parsed = (await response.json()) as { count: number };
              if (response.status !== 200 || parsed.count === 0) throw new Error(`aggregate ${period}: ${response.status}`);
            }, how === 'live' ? postLive : undefined);
            times[how].push(api);
            speedups[how].push(raw / api);
          }
        }
        for (const [how] of modes) {
          const figure = spread(speedups[how], 1);
          report({ path: `aggregate_${period}${how === 'asked again' ? '' : `_${how}`}`, api_p50_ms: times[how].map((t) => ratio(t)), limit_p50_ms: times.raw.map((t) => ratio(t)), speedup: figure.median, speedup_min: figure.min, speedup_max: figure.max },
            `aggregate ${period.padEnd(4)} ${how.padEnd(11)} API p50 ${times[how].map((t) => fmt(t, 1)).join(' / ')} ms   raw GROUP BY p50 ${times.raw.map((t) => fmt(t, 0)).join(' / ')} ms   speed-up ${figure.text}x`);
        }
      }
    } finally {
      await computing?.stop();
    }

    // Downloads: the station's history, against psql writing the same COPY to /dev/null just before.
    const statement = copyStatement(client, downloadQuery({ stationIds: [station], withStation: false }), 'csv');
    const encodings = ['identity', 'gzip', 'br'] as const;
    const downloads = Object.fromEntries(encodings.map((e) => [e, { ratios: [] as number[], seconds: [] as number[], bytes: 0 }]));
    const psqlSeconds: number[] = [];
    // A download is one long measurement, which one burst of another tenant can spoil: within a round,
    // psql and each encoding get the better of two runs.
    for (let round = 0; round < (sections.has('download') ? rounds : 0); round++) {
      const psql = Math.min(await psqlCopy(databaseUrl, statement), await psqlCopy(databaseUrl, statement));
      psqlSeconds.push(psql);
      for (const encoding of encodings) {
        const url = `${serve.url}/api/v1/data/download/?station=${station}`;
        const [a, b] = [await download(url, encoding), await download(url, encoding)];
        const got = a.seconds < b.seconds ? a : b;
        downloads[encoding]!.ratios.push(psql / got.seconds);
        downloads[encoding]!.seconds.push(got.seconds);
        downloads[encoding]!.bytes = got.bytes;
      }
    }
    for (const encoding of sections.has('download') ? encodings : []) {
      const { ratios, seconds, bytes } = downloads[encoding]!;
      const figure = spread(ratios);
      report({ path: `download_${encoding}`, seconds: seconds.map((t) => ratio(t, 3)), limit_seconds: psqlSeconds.map((t) => ratio(t, 3)), ratio: figure.median, ratio_min: figure.min, ratio_max: figure.max, mb: ratio(bytes / 1e6, 1), server_peak_rss_mb: Math.round(peakRssMb(serve.child.pid!)) },
        `download ${encoding.padEnd(8)}   ${seconds.map((t) => (t * 1000).toFixed(0)).join(' / ')} ms   psql \\copy ${psqlSeconds.map((t) => (t * 1000).toFixed(0)).join(' / ')} ms   ratio ${figure.text}   server peak RSS ${Math.round(peakRssMb(serve.child.pid!))} MB`);
    }

    // Latest under 16 keep-alive clients, against the discovery document (no database) under the same load.
    if (!sections.has('latest')) return results;
    const latestRatios: number[] = [];
    const loads: { latest: number; discovery: number; p50: number; errors: number }[] = [];
    for (let round = 0; round < rounds; round++) {
      const discovery = await requestsPerSecond(`${serve.url}/api/v1/`);
      const latest = await requestsPerSecond(`${serve.url}/api/v1/data/latest/?station=${station}`);
      latestRatios.push(latest.rps / discovery.rps);
      loads.push({ latest: latest.rps, discovery: discovery.rps, p50: latest.p50, errors: latest.errors + discovery.errors });
    }
    const figure = spread(latestRatios);
    report({ path: 'latest_16_clients', rps: loads.map((l) => Math.round(l.latest)), p50_ms: loads.map((l) => l.p50), limit_rps: loads.map((l) => Math.round(l.discovery)), ratio: figure.median, ratio_min: figure.min, ratio_max: figure.max, errors: loads.reduce((n, l) => n + l.errors, 0) },
      `latest x16         ${loads.map((l) => fmt(l.latest)).join(' / ')} req/s   discovery ${loads.map((l) => fmt(l.discovery)).join(' / ')} req/s   ratio ${figure.text}   errors ${loads.reduce((n, l) => n + l.errors, 0)}`);
  } finally {
    await client.end();
    await serve.stop();
    await compared?.stop();
  }
  return results;
});
