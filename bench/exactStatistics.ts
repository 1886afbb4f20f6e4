// bench/exactStatistics: what exact means and standard deviations cost (2093d67: each value's shortest
// decimal summed in numeric, sums of squares too, rounded once; the rollups hold numeric sums), before
// (BENCH_BEFORE_REF, f21c8d8 by default, checked out in a git worktree under the temporary directory and
// removed afterwards) and after (this checkout, or BENCH_AFTER_REF), on every engine the server offers,
// each build on a database its own `envmon migrate` made, through its own `envmon serve`. Every figure is a
// ratio to a limit measured in the same round on the same database; the two builds take turns.
//  1. ingest of a station-year (BENCH_EXACT_MINUTES one-minute readings, every field) in 10,000-reading
//     JSON batches by one client, posted as bytes made before the clock starts, in segments of eight
//     batches; before each segment, a raw COPY of as many rows into `readings` (copyReadings, as
//     bench/ingest). The figure is the median of the segments' ratios;
//  2. right after the upload, once: the first daily and then the first hourly aggregate of the year (on
//     timescale the first waits for the refresh of the rollups the upload left behind);
//  3. rounds (BENCH_EXACT_RUNS, after one unmeasured), each path against the raw GROUP BY of the same
//     buckets with count, avg, min and max (as bench/aggregate) on one connection: the daily and hourly
//     aggregate asked again (as served, the aggregate cache on) and computed (AGGREGATE_CACHE_MB=0, from
//     the rollups); the daily aggregate with `as_of` (an instant after the upload), in Asia/Kolkata (its
//     days cut UTC hours, so it is grouped from the readings; its limit groups by the zone's days) and
//     with qc=pass, each computed.
// The client is fetch with its default Accept-Encoding, reading every byte (arrayBuffer).
// Knobs: BENCH_EXACT_RUNS (5), BENCH_EXACT_MINUTES (525,600).
import pg from 'pg';
import type { Engine } from '../src/config.js';
import type { TestServer } from '../test/helpers/database.js';
import { yearMinutes, yearStart } from './dataset.js';
import { benchRows, chunk, copyReadings, fmt, openServer, percentile, saveResults, startServe, stationsWithKeys, type Serve } from './lib.js';
import { migrateWith, withBeforeAndAfter, type Checkout } from './checkouts.js';

const runs = Number(process.env.BENCH_EXACT_RUNS ?? 5);
const minutes = Number(process.env.BENCH_EXACT_MINUTES ?? yearMinutes);
const beforeRef = process.env.BENCH_BEFORE_REF ?? 'f21c8d8';
const afterRef = process.env.BENCH_AFTER_REF;
const batchSize = 10_000;
const batchesPerSegment = 8;
const station = 'year-1';

type Side = {
  name: 'before' | 'after'; checkout: Checkout; databaseUrl: string; key: string;
  serve?: Serve; uncached?: Serve; client?: pg.Client;
};

/** A row of the printed table: a figure, the limit it is measured against in the same run, their ratio. */
type Line = { engine: string; what: string; before: string; after: string; limit: string };

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);
const ms = (n: number) => `${fmt(n, n < 100 ? 1 : 0)} ms`;
const round2 = (n: number) => Math.round(n * 100) / 100;
const range = (values: number[]) => `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`;

/** GETs `url` as a real client does (fetch, its default Accept-Encoding), reading every byte; ms. */
async function fetchAll(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url);
  const body = await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${Buffer.from(body).toString()}`);
  return performance.now() - started;
}

/** Part 1: the station-year posted to each side, segment by segment, each after a raw COPY of as many rows. */
async function ingest(engine: Engine, sides: Side[], results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  // Bytes, as a station holds the batch it sends (see bench/paths); the same for both builds.
  const bodies = chunk(benchRows(minutes, yearStart), batchSize).map((readings) => ({ count: readings.length, body: Buffer.from(JSON.stringify({ station_id: station, readings })) }));
  const segments = chunk(bodies, batchesPerSegment);
  const ratios = new Map<string, { ratio: number[]; http: number; copy: number; readings: number }>(sides.map((s) => [s.name, { ratio: [], http: 0, copy: 0, readings: 0 }]));
  for (const [i, segment] of segments.entries()) {
    const readings = segment.reduce((sum, b) => sum + b.count, 0);
    for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
      // Rows of 2020, far from the year's buckets; copyReadings deletes them after.
      const copyRate = await copyReadings(side.databaseUrl, 'copy-limit', benchRows(readings, Date.parse('2020-01-01T00:00:00Z')));
      const started = performance.now();
      for (const { body, count } of segment) {
        const response = await fetch(`${side.serve!.url}/api/v1/ingest/environmental/`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${side.key}` }, body,
        });
        const result = (await response.json()) as { accepted: number };
        if (response.status !== 201 || result.accepted !== count) throw new Error(`${side.name} ingest failed: ${response.status} ${JSON.stringify(result)}`);
      }
      const seconds = (performance.now() - started) / 1000;
      const seen = ratios.get(side.name)!;
      seen.ratio.push(readings / seconds / copyRate);
      seen.http += seconds;
      seen.copy += readings / copyRate;
      seen.readings += readings;
      console.log(`${engine}: segment ${i + 1}/${segments.length} ${side.name.padEnd(6)} ${fmt(readings)} readings   http ${fmt(readings / seconds).padStart(7)} rows/s   raw COPY ${fmt(copyRate).padStart(7)} rows/s   ratio ${(readings / seconds / copyRate).toFixed(2)}`);
    }
  }
  const shown: Record<string, string> = {};
  for (const side of sides) {
    const seen = ratios.get(side.name)!;
    const row = {
      engine, part: 'ingest', version: side.name, commit: side.checkout.label, batch: batchSize, clients: 1, readings: seen.readings,
      http_rows_per_s: Math.round(seen.readings / seen.http), copy_rows_per_s: Math.round(seen.readings / seen.copy),
      ratio: round2(median(seen.ratio)), segments_ratio: seen.ratio.map(round2),
    };
    results.push(row);
    shown[side.name] = `${row.ratio.toFixed(2)} (${range(seen.ratio)}; ${fmt(row.http_rows_per_s)} / ${fmt(row.copy_rows_per_s)} rows/s)`;
  }
  lines.push({ engine, what: 'ingest 10,000 x1 / raw COPY (median segment)', before: shown.before!, after: shown.after!, limit: 'raw COPY of as many rows, before each segment' });
}

/** The limit: a raw GROUP BY of the station's readings by `period` in `zone` with count, avg, min, max (as bench/aggregate). */
async function rawGroupBy(client: pg.Client, period: 'day' | 'hour', zone = 'UTC'): Promise<number> {
  const started = performance.now();
  await client.query(
    `select date_trunc($2, ts, $3) as period_start, count(*), avg(temperature_c), min(temperature_c), max(temperature_c),
       avg(humidity_rh), avg(pressure_hpa), avg(pm2_5) from readings where station_id = $1 group by 1 order by 1`,
    [station, period, zone],
  );
  return performance.now() - started;
}

type Path = { key: string; what: string; limit: 'day' | 'hour' | 'kolkata'; url: (side: Side) => string };

/** Parts 2 and 3 on both sides. */
async function reads(engine: Engine, sides: Side[], results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const aggregate = `/api/v1/data/aggregate/?station=${station}`;
  const first: Record<string, { day: number; hour: number }> = {};
  // Part 2: the builds one after the other, each right after its own upload ended (they were alternated).
  for (const side of sides) {
    const day = await fetchAll(`${side.serve!.url}${aggregate}&period=day`);
    const hour = await fetchAll(`${side.serve!.url}${aggregate}&period=hour`);
    first[side.name] = { day, hour };
    console.log(`${engine}: ${side.name} first daily aggregate ${ms(day)}, then first hourly ${ms(hour)}`);
  }
  // Every reading of the year was recorded before this instant.
  const asOf = encodeURIComponent(new Date().toISOString());
  await new Promise((resolve) => setTimeout(resolve, 50));
  const paths: Path[] = [
    { key: 'day_again', what: 'daily aggregate, asked again', limit: 'day', url: (s) => `${s.serve!.url}${aggregate}&period=day` },
    { key: 'hour_again', what: 'hourly aggregate, asked again', limit: 'hour', url: (s) => `${s.serve!.url}${aggregate}&period=hour` },
    { key: 'day_computed', what: 'daily aggregate, computed (cache off)', limit: 'day', url: (s) => `${s.uncached!.url}${aggregate}&period=day` },
    { key: 'hour_computed', what: 'hourly aggregate, computed (cache off)', limit: 'hour', url: (s) => `${s.uncached!.url}${aggregate}&period=hour` },
    { key: 'day_as_of', what: 'daily aggregate as_of', limit: 'day', url: (s) => `${s.uncached!.url}${aggregate}&period=day&as_of=${asOf}` },
    { key: 'day_kolkata', what: 'daily aggregate tz=Asia/Kolkata', limit: 'kolkata', url: (s) => `${s.uncached!.url}${aggregate}&period=day&tz=Asia/Kolkata` },
    { key: 'day_qc_pass', what: 'daily aggregate qc=pass', limit: 'day', url: (s) => `${s.uncached!.url}${aggregate}&period=day&qc=pass` },
  ];
  const limits = { day: (c: pg.Client) => rawGroupBy(c, 'day'), hour: (c: pg.Client) => rawGroupBy(c, 'hour'), kolkata: (c: pg.Client) => rawGroupBy(c, 'day', 'Asia/Kolkata') };
  const timed: Record<string, () => Promise<number>>[] = sides.map((side) => ({
    ...Object.fromEntries(Object.entries(limits).map(([k, f]) => [`limit_${k}`, () => f(side.client!)])),
    ...Object.fromEntries(paths.map((p) => [p.key, () => fetchAll(p.url(side))])),
  }));
  const keys = Object.keys(timed[0]!);
  // Per side, per key: the milliseconds of each measured round.
  const times = sides.map(() => new Map<string, number[]>(keys.map((k) => [k, []])));
  for (let round = -1; round < runs; round++) {
    for (const s of round % 2 === 0 ? [0, 1] : [1, 0]) {
      for (let i = 0; i < keys.length; i++) {
        const key = keys[(i + Math.max(round, 0)) % keys.length]!;
        const took = await timed[s]![key]!();
        if (round >= 0) times[s]!.get(key)!.push(took);
      }
    }
    if (round >= 0) console.log(`${engine}: round ${round + 1}/${runs} done`);
  }
  const cell = (s: number, key: string, limit: string) => {
    const values = times[s]!.get(key)!;
    const limitValues = times[s]!.get(`limit_${limit}`)!;
    const ratios = values.map((v, i) => v / limitValues[i]!);
    return { ms: median(values), limit_ms: median(limitValues), ratio: median(ratios), ratios };
  };
  // Part 2's single figures, against the median raw GROUP BY of the rounds after them.
  for (const period of ['day', 'hour'] as const) {
    const shown: Record<string, string> = {};
    for (const [s, side] of sides.entries()) {
      const limitMs = median(times[s]!.get(`limit_${period}`)!);
      const took = first[side.name]![period];
      results.push({ engine, part: 'first aggregate', period, version: side.name, commit: side.checkout.label, ms: +took.toFixed(1), raw_group_by_ms: +limitMs.toFixed(1), ratio: round2(took / limitMs) });
      shown[side.name] = `${(took / limitMs).toFixed(2)} (${ms(took)} / ${ms(limitMs)})`;
    }
    lines.push({ engine, what: `${period === 'day' ? 'daily' : 'hourly'} aggregate, first after the upload (once)`, before: shown.before!, after: shown.after!, limit: `raw GROUP BY by ${period}, median of the rounds` });
  }
  for (const path of paths) {
    const shown: Record<string, string> = {};
    for (const [s, side] of sides.entries()) {
      const c = cell(s, path.key, path.limit);
      results.push({ engine, part: 'aggregate', path: path.key, version: side.name, commit: side.checkout.label, runs, ms: +c.ms.toFixed(1), raw_group_by_ms: +c.limit_ms.toFixed(1), ratio: +c.ratio.toFixed(3), rounds_ratio: c.ratios.map((r) => +r.toFixed(3)) });
      shown[side.name] = `${c.ratio.toFixed(c.ratio < 0.1 ? 3 : 2)} (${ms(c.ms)} / ${ms(c.limit_ms)})`;
    }
    lines.push({ engine, what: path.what, before: shown.before!, after: shown.after!, limit: `raw GROUP BY by ${path.limit === 'kolkata' ? 'the zone\'s day' : path.limit}` });
  }
}

/** Every part on one engine: a database migrated by each checkout, dropped afterwards. */
async function measureEngine(server: TestServer, engine: Engine, before: Checkout, after: Checkout, results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const sides: Side[] = [];
  try {
    for (const [name, checkout] of [['before', before], ['after', after]] as const) {
      const databaseUrl = await server.createEmptyDatabase();
      sides.push({ name, checkout, databaseUrl, key: '' });
      await migrateWith(checkout, databaseUrl, engine);
      sides.at(-1)!.key = (await stationsWithKeys(databaseUrl, [station]))[0]!;
    }
    for (const side of sides) side.serve = await startServe(side.databaseUrl, {}, side.checkout.bin);
    await ingest(engine, sides, results, lines);
    for (const side of sides) {
      side.uncached = await startServe(side.databaseUrl, { AGGREGATE_CACHE_MB: '0' }, side.checkout.bin);
      // The limits' connection stays open through the rounds, set as the service's sessions are.
      side.client = new pg.Client({ connectionString: side.databaseUrl });
      await side.client.connect();
      await side.client.query(`set timezone = 'UTC'; set jit = off`);
    }
    await reads(engine, sides, results, lines);
  } finally {
    for (const side of sides) {
      await side.client?.end();
      await side.serve?.stop();
      await side.uncached?.stop();
      await server.dropDatabase(side.databaseUrl);
    }
  }
}

async function main() {
  const results: Record<string, unknown>[] = [];
  const lines: Line[] = [];
  const labels = await withBeforeAndAfter(beforeRef, afterRef, 'exact', async (before, after) => {
    const server = await openServer();
    try {
      console.log(`before: ${before.label}   after: ${after.label}   station-year: ${fmt(minutes)} readings   rounds: ${runs}`);
      for (const engine of server.engines) await measureEngine(server, engine, before, after, results, lines);
    } finally {
      await server.close();
    }
  });
  saveResults('exactStatistics', results);

  const header: Line = { engine: 'engine', what: 'path', before: `before ${labels.before}`, after: `after ${labels.after}`, limit: 'limit (same round, same database)' };
  const widths = { engine: 0, what: 0, before: 0, after: 0 };
  for (const line of [header, ...lines]) for (const key of Object.keys(widths) as (keyof typeof widths)[]) widths[key] = Math.max(widths[key], line[key].length);
  console.log(`\nexact statistics: figure / limit (figure / limit in ms), medians of ${runs} rounds`);
  for (const line of [header, ...lines]) {
    console.log(`${line.engine.padEnd(widths.engine)}  ${line.what.padEnd(widths.what)}  ${line.before.padEnd(widths.before)}  ${line.after.padEnd(widths.after)}  ${line.limit}`);
  }
}

await main();
