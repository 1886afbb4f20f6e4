// bench/quality: what QARTOD quality-control flags computed at read time cost (qc=true on the downloads,
// the flags always in a Parquet download, qc=pass on the aggregate, the station quality report), each
// figure beside a limit measured in the same run, on every engine the server offers, through the real
// `envmon serve`, every byte read as a client reads it:
//  1. ingest: readings/s of batches of 1,000 through HTTP, 1 and 4 concurrent clients (each its own
//     station), against a raw COPY of as many rows into the same database (copyReadings, as bench/ingest),
//     for "after" and for the checkout before the change (BENCH_BEFORE_REF, 6915ed4 by default, checked out
//     in a git worktree under the temporary directory and removed afterwards), each on a fresh database
//     its own `envmon migrate` made, rounds in alternating order. The change left ingest alone: the two
//     ratios to COPY should match;
//  2. on a station-year (the fixture below), medians of BENCH_QUALITY_RUNS, read in turns:
//     a. /stations/{id}/quality/ over the fixture's days against the limit of reading the same readings,
//        a binary COPY of their timestamps and the six metrics in time order read whole by a pg client.
//        Target: the report within 1 s. Also the report right after a write that moves the station's
//        settled mark (a re-sent reading), which counts the whole series' spacings again: the kept
//        spacings (SeriesSpacings) on and off;
//     b. the CSV download with qc=true against the same download without;
//     c. the Parquet download (which now always has the flags) against the same download served by the
//        checkout before the change: a second `envmon serve` from the worktree on the same database (its
//        schema lacks only qc_configs, which that checkout never reads; its functions are the same, so
//        starting it applies nothing, which is checked);
//     d. the daily aggregate of the six metrics with qc=pass (summed from the readings, never kept)
//        against the raw GROUP BY over the station's readings with the same statistics, and against the
//        same aggregate without qc as served;
//     e. a backfill: a batch of 1,000 readings posted into the mid-year outage against a batch of 1,000
//        posted after the station's newest reading (each round waits, unmeasured, for the rollups'
//        backlog to drain); then the backfilled day's CSV download with qc=true against it without.
//  On timescale, a-d as written and again once the columnstore policy's job has compressed the chunks;
//  e comes last, so there it backfills compressed chunks, as the policy leaves a station's past.
// "After" is this checkout, or BENCH_AFTER_REF checked out the same way. The fixture (bench/qualityFixture) is one reading a
// minute from 2025-01-01 (BENCH_QUALITY_MINUTES, 525,600) written by one insert ... generate_series into a
// database this checkout's `envmon migrate` made: daily and seasonal cycles with noise for temperature,
// humidity, pressure, PM2.5, PM10 and CO2; a few spikes; flat stretches of several hours (stuck sensors);
// values missing now and then; gaps of several hours; and an outage of a few days that part e fills.
// Knobs: BENCH_QUALITY_RUNS (timed runs per read, 5), BENCH_QUALITY_ROUNDS (ingest rounds, 3),
// BENCH_QUALITY_INGEST_ROWS (readings per ingest run, 60,000), BENCH_QUALITY_MINUTES (the fixture, 525,600).
import http from 'node:http';
import { parquetMetadata } from 'hyparquet';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { Engine } from '../src/config.js';
import type { TestServer } from '../test/helpers/database.js';
import { yearStart } from './dataset.js';
import { benchRows, chunk, copyReadings, fmt, openServer, percentile, saveResults, startServe, stationsWithKeys, withClient, type Serve } from './lib.js';
import { checkoutOf, migrateWith, thisCheckout, type Checkout } from './checkouts.js';
import { batchSize, fixtureMinutes, fixtureStation, gaps, loadFixture, metrics, minutesPerDay, outage, postedReadings, stuck, type Span } from './qualityFixture.js';

const runs = Number(process.env.BENCH_QUALITY_RUNS ?? 5);
const ingestRows = Number(process.env.BENCH_QUALITY_INGEST_ROWS ?? 60_000);
const ingestRounds = Number(process.env.BENCH_QUALITY_ROUNDS ?? 3);
const beforeRef = process.env.BENCH_BEFORE_REF ?? '6915ed4';
const afterRef = process.env.BENCH_AFTER_REF;
const clientCounts = [1, 4];
const reportTargetMs = 1_000;


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

type Fetched = { ms: number; bytes: number; lines: number; head: string };

/**
 * GETs `url` as a plain client does (no Accept-Encoding: curl's default, identity), reading every byte;
 * keeps the first few kilobytes (`head`) for the checks, or the whole body when `keep`.
 */
function getAll(url: string, keep?: Buffer[]): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http.get(url, { headers: { 'Accept-Encoding': 'identity' } }, (response) => {
      let bytes = 0;
      let lines = 0;
      const parts: Buffer[] = [];
      response.on('data', (piece: Buffer) => {
        bytes += piece.length;
        for (let at = piece.indexOf(10); at !== -1; at = piece.indexOf(10, at + 1)) lines++;
        if (response.statusCode !== 200 || bytes - piece.length < 4_096) parts.push(piece);
        keep?.push(piece);
      });
      response.on('end', () => {
        const ms = performance.now() - started;
        if (response.statusCode !== 200) reject(new Error(`${url}: ${response.statusCode} ${Buffer.concat(parts).toString()}`));
        else resolve({ ms, bytes, lines, head: Buffer.concat(parts).subarray(0, 4_096).toString() });
      });
      response.on('error', reject);
    }).on('error', reject);
  });
}

/** The whole body of `url`, unmeasured (what the checks read). */
async function bodyOf(url: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  await getAll(url, parts);
  return Buffer.concat(parts);
}

/** A binary COPY out, read whole by the pg client: milliseconds. */
async function copyOutMs(client: pg.Client, text: string): Promise<number> {
  const started = performance.now();
  let bytes = 0;
  for await (const piece of client.query(copyStreams.to(text))) bytes += (piece as Buffer).length;
  if (bytes < 21) throw new Error(`${text}: nothing read`);
  return performance.now() - started;
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
const dayOf = (minute: number) => new Date(yearStart + minute * 60_000).toISOString().slice(0, 10);

type Report = { observed: number; expected: number; coverage_pct: number; gaps: unknown[]; flat_lines: { metric: string }[]; spikes: Record<string, number>; daily: unknown[] };

/** Parts 2a-d on the fixture database in its present state (`state`: as written, or compressed). */
async function measureReads(engine: Engine, state: string, databaseUrl: string, readings: number, key: string, checkouts: { before: Checkout; after: Checkout },
  results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const serve = await startServe(databaseUrl, {}, checkouts.after.bin);
  const label = `${engine}${state ? ` (${state})` : ''}`;
  const station = `station=${fixtureStation}`;
  try {
    await withClient(databaseUrl, async (client) => {
      // a. The report over every day of the fixture, against reading the same readings.
      const [from, to] = [dayOf(0), dayOf(fixtureMinutes - 1)];
      const reportUrl = `${serve.url}/api/v1/stations/${fixtureStation}/quality/?from_date=${from}&to_date=${to}`;
      const report = JSON.parse((await bodyOf(reportUrl)).toString()) as Report;
      // The injected flat stretches the report must find (those no gap cuts).
      const cut = (s: Span) => [...gaps, outage].some((g) => g.from < s.to && s.from < g.to);
      const flatsInjected = Object.values(stuck).flat().filter((s) => !cut(s)).length;
      if (report.observed !== readings || report.daily.length !== Math.ceil(fixtureMinutes / minutesPerDay) || report.flat_lines.length < flatsInjected) {
        throw new Error(`report: ${report.observed} readings of ${readings}, ${report.daily.length} days, ${report.flat_lines.length} flat lines (${flatsInjected} made)`);
      }
      // The station's spacings before its settled day are kept between reads (SeriesSpacings): the report
      // as a station that posts live gets it, and right after a write that moves the mark (a re-sent
      // reading of the fixture's first day), which counts the whole series again.
      const resent = JSON.stringify({ station_id: fixtureStation, readings: (await postedReadings(client, 0, 1)) });
      const reportTimes = await interleavedMedians({
        report: async () => (await getAll(reportUrl)).ms,
        report_counting_again: async () => {
          const posted = await fetch(`${serve.url}/api/v1/ingest/environmental/`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` }, body: resent });
          if (posted.status !== 201) throw new Error(`re-sent reading: ${posted.status} ${await posted.text()}`);
          return (await getAll(reportUrl)).ms;
        },
        raw_copy: () => copyOutMs(client, `copy (select ts, ${metrics.join(', ')} from readings where station_id = '${fixtureStation}' order by ts) to stdout (format binary)`),
      });
      const reportRatio = round2(reportTimes.report / reportTimes.raw_copy);
      const countingRatio = round2(reportTimes.report_counting_again / reportTimes.raw_copy);
      const found = { gaps: report.gaps.length, flat_lines: report.flat_lines.length, spikes: report.spikes, coverage_pct: report.coverage_pct };
      results.push({
        engine, state, part: 'report', runs, readings, days: report.daily.length, report_ms: +reportTimes.report.toFixed(1), raw_copy_ms: +reportTimes.raw_copy.toFixed(1),
        ratio: reportRatio, target_ms: reportTargetMs, met: reportTimes.report < reportTargetMs, found,
        counting_again_ms: +reportTimes.report_counting_again.toFixed(1), counting_again_ratio: countingRatio,
      });
      lines.push({ engine: label, what: `quality report, ${report.daily.length} days`, value: ms(reportTimes.report), limit: `raw binary COPY ${ms(reportTimes.raw_copy)}`, ratio: reportRatio,
        note: `target < 1 s: ${reportTimes.report < reportTargetMs ? 'met' : 'MISSED'}` });
      lines.push({ engine: label, what: 'quality report after a write that moves the settled mark (spacings counted again)', value: ms(reportTimes.report_counting_again), limit: `raw binary COPY ${ms(reportTimes.raw_copy)}`, ratio: countingRatio });
      console.log(`${label}: quality report ${from}..${to}   ${ms(reportTimes.report)} (after a write moving the mark ${ms(reportTimes.report_counting_again)})   raw binary COPY ${ms(reportTimes.raw_copy)}   ratio ${reportRatio.toFixed(2)}   `
        + `(found ${found.gaps} gaps, ${found.flat_lines} flat lines, spikes ${JSON.stringify(found.spikes)}, coverage ${found.coverage_pct} %)`);

      // b. The CSV download with qc=true against it without.
      await downloadPair(label, engine, state, `${serve.url}/api/v1/data/download/?${station}`, 'station-year', readings, results, lines);

      // c. The Parquet download against the same download from the checkout before the change, on this database.
      const settings = async () => (await client.query<{ value: string }>(`select string_agg(key || '=' || value, ',' order by key) as value from envmon_settings`)).rows[0]!.value
        + (await client.query<{ n: number }>(`select count(*)::int as n from envmon_migrations`)).rows[0]!.n;
      const settingsBefore = await settings();
      const previous = await startServe(databaseUrl, {}, checkouts.before.bin);
      // The checkout before may apply its own function bodies (an older refresh procedure, which no read
      // measured here runs); nothing else may differ, and this checkout's are applied again after.
      const functionsOnly = (text: string) => text.replace(/functions_sha256=[0-9a-f]+/, '');
      const replacedFunctions = (await settings()) !== settingsBefore;
      try {
        if (functionsOnly(await settings()) !== functionsOnly(settingsBefore)) throw new Error(`${checkouts.before.label} changed the database's migrations when it started`);
        const parquet = `/api/v1/data/download/?${station}&output=parquet`;
        const shapes = await Promise.all([serve, previous].map(async (s) => {
          const meta = parquetMetadata(new Uint8Array(await bodyOf(`${s.url}${parquet}`)).buffer);
          return { rows: Number(meta.num_rows), flags: meta.schema.filter((c) => c.name.endsWith('_qc')).length, columns: meta.schema.length - 1 };
        }));
        const [now, then] = shapes as [typeof shapes[0], typeof shapes[0]];
        if (now.rows !== readings || then.rows !== readings || now.flags === 0 || then.flags !== 0) {
          throw new Error(`parquet: after ${JSON.stringify(now)}, before ${JSON.stringify(then)}, ${readings} readings`);
        }
        let size = { after: 0, before: 0 };
        const medians = await interleavedMedians({
          after: async () => { const f = await getAll(`${serve.url}${parquet}`); size = { ...size, after: f.bytes }; return f.ms; },
          before: async () => { const f = await getAll(`${previous.url}${parquet}`); size = { ...size, before: f.bytes }; return f.ms; },
        });
        const ratio = round2(medians.after / medians.before);
        results.push({
          engine, state, part: 'download', output: 'parquet', runs, readings, before: checkouts.before.label, after_mb: +(size.after / 1e6).toFixed(1), before_mb: +(size.before / 1e6).toFixed(1),
          after_columns: now.columns, before_columns: then.columns, flag_columns: now.flags, after_ms: +medians.after.toFixed(1), before_ms: +medians.before.toFixed(1), ratio,
          before_serve: replacedFunctions ? 'the before checkout\'s envmon serve on this database: it applied its own function bodies, this checkout\'s applied again after' : 'the before checkout\'s envmon serve on this (after-migrated) database: it started and applied nothing',
        });
        lines.push({ engine: label, what: `download parquet, with ${now.flags} flag columns (${mb(size.after)})`, value: ms(medians.after), limit: `${checkouts.before.label} ${ms(medians.before)} (${mb(size.before)})`, ratio });
        console.log(`${label}: download parquet   after ${ms(medians.after)} (${mb(size.after)}, ${now.columns} columns)   before ${ms(medians.before)} (${mb(size.before)}, ${then.columns} columns)   ratio ${ratio.toFixed(2)}`);
      } finally {
        await previous.stop();
        if (replacedFunctions) await migrateWith(checkouts.after, databaseUrl, engine);
      }
      if ((await settings()) !== settingsBefore) throw new Error(`${checkouts.after.label}'s functions were not applied again`);

      // d. The daily aggregate with qc=pass against the raw GROUP BY, and against it without qc (as served).
      const aggregate = `${serve.url}/api/v1/data/aggregate/?${station}&period=day&metrics=${metrics.join(',')}`;
      const counts: Record<string, number> = {};
      const served = (key: string, url: string) => async () => {
        const fetched = await getAll(url);
        counts[key] = Number(/"count":(\d+)/.exec(fetched.head)?.[1]);
        return fetched.ms;
      };
      const medians = await interleavedMedians({
        qc_pass: served('qc_pass', `${aggregate}&qc=pass`),
        served: served('served', aggregate),
        // The limit: a GROUP BY over the station's readings with the same statistics, on one connection, every row read.
        raw_group_by: async () => {
          const started = performance.now();
          const { rowCount } = await client.query(`
            select date_trunc('day', ts, 'UTC') as period_start, count(*),
              ${metrics.map((m) => `count(${m}), avg(${m}), min(${m}), max(${m}), stddev_samp(${m})`).join(', ')}
            from readings where station_id = $1 group by 1 order by 1`, [fixtureStation]);
          counts.raw_group_by = rowCount ?? 0;
          return performance.now() - started;
        },
      });
      if (counts.qc_pass !== counts.raw_group_by || counts.served !== counts.raw_group_by) throw new Error(`aggregate: periods ${JSON.stringify(counts)}`);
      const row = {
        engine, state, part: 'aggregate', period: 'day', periods: counts.raw_group_by!, runs, readings, metrics,
        qc_pass_ms: +medians.qc_pass.toFixed(1), served_ms: +medians.served.toFixed(2), raw_group_by_ms: +medians.raw_group_by.toFixed(1),
        qc_pass_vs_raw_group_by: round2(medians.qc_pass / medians.raw_group_by), qc_pass_vs_served: round2(medians.qc_pass / medians.served),
      };
      results.push(row);
      lines.push(
        { engine: label, what: `aggregate day qc=pass (${fmt(row.periods)} periods)`, value: ms(medians.qc_pass), limit: `raw GROUP BY ${ms(medians.raw_group_by)}`, ratio: row.qc_pass_vs_raw_group_by },
        { engine: label, what: 'aggregate day qc=pass', value: ms(medians.qc_pass), limit: `without qc ${ms(medians.served)}`, ratio: row.qc_pass_vs_served, note: 'without qc as served (rollups, aggregate cache)' },
      );
      console.log(`${label}: aggregate day (${fmt(row.periods)} periods)   qc=pass ${ms(medians.qc_pass)}   without qc ${ms(medians.served)}   raw GROUP BY ${ms(medians.raw_group_by)}   qc=pass/raw ${row.qc_pass_vs_raw_group_by.toFixed(2)}`);
    });
  } finally {
    await serve.stop();
  }
}

/** A CSV download (`base`) with qc=true against it without, as medians; the same records either way. */
async function downloadPair(label: string, engine: Engine, state: string, base: string, what: string, readings: number,
  results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const seen: Record<'plain' | 'qc', Fetched | undefined> = { plain: undefined, qc: undefined };
  const timed = (key: 'plain' | 'qc', url: string) => async () => {
    const fetched = await getAll(url);
    seen[key] = fetched;
    return fetched.ms;
  };
  const medians = await interleavedMedians({ plain: timed('plain', base), qc: timed('qc', `${base}&qc=true`) });
  const [plain, qc] = [seen.plain!, seen.qc!];
  if (qc.lines !== plain.lines || plain.lines < readings || !/temperature_c_qc/.test(qc.head) || /_qc/.test(plain.head)) {
    throw new Error(`download csv ${what}: qc=true gave ${qc.lines} lines, without ${plain.lines}, ${readings} readings`);
  }
  const ratio = round2(medians.qc / medians.plain);
  results.push({
    engine, state, part: 'download', output: 'csv', what, runs, readings, plain_mb: +(plain.bytes / 1e6).toFixed(1), qc_mb: +(qc.bytes / 1e6).toFixed(1),
    plain_ms: +medians.plain.toFixed(1), qc_ms: +medians.qc.toFixed(1), ratio,
  });
  lines.push({ engine: label, what: `download csv qc=true, ${what} (${mb(qc.bytes)})`, value: ms(medians.qc), limit: `without qc ${ms(medians.plain)} (${mb(plain.bytes)})`, ratio });
  console.log(`${label}: download csv ${what}   qc=true ${ms(medians.qc)} (${mb(qc.bytes)})   without ${ms(medians.plain)} (${mb(plain.bytes)})   ratio ${ratio.toFixed(2)}`);
}

/**
 * Part 2e: batches of 1,000 posted into the outage (a backfill, reaching back before the station's
 * settled mark) and after the station's newest reading, in turns; before each, unmeasured, the rollups'
 * backlog of the station drains (timescale refreshes a backfill's rollups after answering it). Then the
 * backfilled day's CSV download with qc=true against it without.
 */
async function measureBackfill(engine: Engine, state: string, databaseUrl: string, key: string, after: Checkout, results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const serve = await startServe(databaseUrl, {}, after.bin);
  const label = `${engine}${state ? ` (${state})` : ''}`;
  try {
    await withClient(databaseUrl, async (client) => {
      const drained: Record<'backfill' | 'newest', number[]> = { backfill: [], newest: [] };
      const next = { backfill: outage.from, newest: fixtureMinutes };
      const posted = (kind: 'backfill' | 'newest') => async () => {
        const body = Buffer.from(JSON.stringify({ station_id: fixtureStation, readings: await postedReadings(client, next[kind], next[kind] + batchSize) }));
        next[kind] += batchSize;
        const started = performance.now();
        const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` }, body,
        });
        const result = (await response.json()) as { accepted: number };
        const took = performance.now() - started;
        if (response.status !== 201 || result.accepted !== batchSize) throw new Error(`${kind} batch: ${response.status} ${JSON.stringify(result)}`);
        const waited = performance.now();
        for (let polls = 0; (await client.query(`select 1 from rollup_backlog where station_id = $1`, [fixtureStation])).rowCount; polls++) {
          if (polls > 2_400) throw new Error(`${kind} batch: the rollups' backlog did not drain in 2 minutes`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        drained[kind].push(performance.now() - waited);
        return took;
      };
      const medians = await interleavedMedians({ backfill: posted('backfill'), newest: posted('newest') });
      const ratio = round2(medians.backfill / medians.newest);
      const drain = (kind: 'backfill' | 'newest') => +percentile([...drained[kind]].sort((a, b) => a - b), 50).toFixed(1);
      results.push({
        engine, state, part: 'backfill', batch: batchSize, runs, backfill_ms: +medians.backfill.toFixed(1), newest_ms: +medians.newest.toFixed(1), ratio,
        backlog_drained_after_backfill_ms: drain('backfill'), backlog_drained_after_newest_ms: drain('newest'),
      });
      lines.push({ engine: label, what: `post 1,000 into the mid-year outage (backfill)`, value: ms(medians.backfill), limit: `1,000 after the newest ${ms(medians.newest)}`, ratio });
      console.log(`${label}: post 1,000   backfill ${ms(medians.backfill)}   after the newest reading ${ms(medians.newest)}   ratio ${ratio.toFixed(2)}   (rollups' backlog drained in ${drain('backfill')} / ${drain('newest')} ms)`);

      const day = dayOf(outage.from);
      const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from readings where station_id = $1 and ts >= $2::date and ts < $2::date + 1`, [fixtureStation, day]);
      await downloadPair(label, engine, state, `${serve.url}/api/v1/data/download/?station=${fixtureStation}&from_date=${day}&to_date=${day}`, `backfilled day ${day}`, rows[0]!.n, results, lines);
    });
  } finally {
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

/** Part 1: before and after, each against raw COPY into its own database, rounds in alternating order. */
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

/** A fresh database migrated by `checkout` (on timescale with the columnstore policy's job paused); its job, if any. */
async function databaseOf(server: TestServer, engine: Engine, checkout: Checkout, made: string[]): Promise<{ databaseUrl: string; job?: number }> {
  const databaseUrl = await server.createEmptyDatabase();
  made.push(databaseUrl);
  await migrateWith(checkout, databaseUrl, engine);
  return { databaseUrl, job: engine === 'timescale' ? await pauseColumnstoreJob(databaseUrl) : undefined };
}

/** Every part on one engine: part 1 on a database of each checkout, then part 2 on the fixture's; all dropped afterwards. */
async function measureEngine(server: TestServer, engine: Engine, before: Checkout, after: Checkout, results: Record<string, unknown>[], lines: Line[]): Promise<void> {
  const made: string[] = [];
  try {
    const sides: Side[] = [];
    for (const [name, checkout] of [['before', before], ['after', after]] as const) {
      sides.push({ name, checkout, databaseUrl: (await databaseOf(server, engine, checkout, made)).databaseUrl, keys: [] });
    }
    await measureIngest(engine, sides, results, lines);
    for (const side of sides) await server.dropDatabase(side.databaseUrl);

    const { databaseUrl, job } = await databaseOf(server, engine, after, made);
    const loaded = await loadFixture(databaseUrl, engine);
    results.push({ engine, part: 'fixture', readings: loaded.readings, minutes: fixtureMinutes, seconds: +loaded.seconds.toFixed(1), gaps, outage, stuck });
    console.log(`${engine}: fixture of ${fmt(loaded.readings)} readings written in ${loaded.seconds.toFixed(1)} s (rollups and vacuum included)`);
    await measureReads(engine, engine === 'timescale' ? 'rowstore' : '', databaseUrl, loaded.readings, loaded.key, { before, after }, results, lines);
    if (engine === 'timescale') {
      const compressed = await runColumnstoreJob(databaseUrl, job!);
      if (compressed.compressed !== compressed.chunks) throw new Error(`${compressed.compressed} of ${compressed.chunks} chunks compressed`);
      console.log(`${engine}: columnstore job compressed ${compressed.chunks} chunks in ${compressed.seconds.toFixed(1)} s`);
      await measureReads(engine, 'columnstore', databaseUrl, loaded.readings, loaded.key, { before, after }, results, lines);
    }
    await measureBackfill(engine, engine === 'timescale' ? 'columnstore' : '', databaseUrl, loaded.key, after, results, lines);
  } finally {
    for (const databaseUrl of made) await server.dropDatabase(databaseUrl);
  }
}

async function main() {
  const started = performance.now();
  const results: Record<string, unknown>[] = [];
  const lines: Line[] = [];
  const before = checkoutOf(beforeRef, 'quality');
  let after: Checkout | undefined;
  try {
    after = afterRef ? checkoutOf(afterRef, 'quality') : thisCheckout();
    const server = await openServer();
    try {
      console.log(`before: ${before.label}   after: ${after.label}   station-year: ${fmt(fixtureMinutes)} minutes   runs: ${runs}   ingest: ${fmt(ingestRows)} readings x ${ingestRounds} rounds`);
      for (const engine of server.engines) await measureEngine(server, engine, before, after, results, lines);
    } finally {
      await server.close();
    }
  } finally {
    after?.remove();
    before.remove();
  }
  saveResults('quality', results);

  const widths = { engine: 0, what: 0, value: 0, limit: 0 };
  for (const line of lines) for (const key of Object.keys(widths) as (keyof typeof widths)[]) widths[key] = Math.max(widths[key], line[key].length);
  console.log(`\nquality: before ${before.label}, after ${after!.label}; ratio = value / limit, both measured in this run; ${((performance.now() - started) / 60_000).toFixed(1)} minutes`);
  for (const line of lines) {
    console.log(`${line.engine.padEnd(widths.engine)}  ${line.what.padEnd(widths.what)}  ${line.value.padStart(widths.value)}  ${line.limit.padEnd(widths.limit)}  ${line.ratio.toFixed(2).padStart(5)}${line.note ? `  ${line.note}` : ''}`);
  }
}

await main();
