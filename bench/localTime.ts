// bench/localTime: statistics in local time over one station-year (bench/dataset), each served answer beside
// the raw SQL a researcher would write for it, in the same run, on every engine the server offers:
//  1. the daily aggregate in Europe/Zurich (a whole-hour zone: summed from the hourly rollup) and in
//     Asia/Kolkata (half an hour off UTC: grouped from the readings), against a GROUP BY over the readings
//     on the zone's days (date_trunc in the zone) with the same statistics;
//  2. daily percentiles (5, 25, 50, 75, 95 of the four default metrics) in UTC and in Europe/Zurich, against
//     percentile_cont ... GROUP BY over the readings with the same buckets. Target: not slower than it. The
//     same answer as of now (which groups the readings, the reference way: the percentiles read bucket by
//     bucket off), and in Asia/Kolkata (grouped too), beside the same limit;
//  3. the diurnal profile (hour of the day in Europe/Zurich), from the rollup and with percentiles, against
//     a GROUP BY on the hour of the zone's clock (with percentiles both sort every reading by its slot).
// The service runs with AGGREGATE_CACHE_MB=0, so that every request computes its answer (a repeated
// request is otherwise answered from the aggregate cache while the station's readings stay as they were);
// the client reads every byte, uncompressed, as curl or pandas do. Medians of BENCH_LOCAL_RUNS (7), the
// served request and its raw statement taking turns.
import http from 'node:http';
import pg from 'pg';
import { loadStationYears } from './dataset.js';
import { eachEngine, fmt, percentile, startServe } from './lib.js';

const runs = Number(process.env.BENCH_LOCAL_RUNS ?? 7);
const percentiles = [5, 25, 50, 75, 95];
const fractions = `array[${percentiles.map((p) => p / 100).join(',')}]::float8[]`;
const defaultMetrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5'];

/** GETs `url` as curl does (no compression), reading every byte; throws unless 200. */
function getAll(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { 'Accept-Encoding': 'identity' } }, (response) => {
      let bytes = 0;
      response.on('data', (piece: Buffer) => { bytes += piece.length; });
      response.on('end', () => (response.statusCode === 200 ? resolve(bytes) : reject(new Error(`${url}: ${response.statusCode}`))));
      response.on('error', reject);
    }).on('error', reject);
  });
}

/** The statistics of the default aggregate, as a researcher writes them over the readings. */
const defaultStats = `count(*), avg(temperature_c), min(temperature_c), max(temperature_c), avg(humidity_rh), avg(pressure_hpa), avg(pm2_5),
  ${defaultMetrics.map((m) => `stddev_samp(${m})`).join(', ')}`;
const percentileStats = defaultMetrics.map((m) => `percentile_cont(${fractions}) within group (order by ${m})`).join(', ');

type Case = { what: string; url: string; raw: string; target?: string };

/** Medians (ms) of the served request and its raw statement, taking turns, after one unmeasured round. */
async function measure(client: pg.Client, base: string, station: string, c: Case): Promise<{ served: number; raw: number }> {
  const served: number[] = [];
  const raw: number[] = [];
  for (let round = -1; round < runs; round++) {
    const turns = [
      async () => { const t = performance.now(); await getAll(`${base}${c.url}`); return ['served', performance.now() - t] as const; },
      async () => { const t = performance.now(); await client.query(c.raw, [station]); return ['raw', performance.now() - t] as const; },
    ];
    if (round % 2) turns.reverse();
    for (const turn of turns) {
      const [which, ms] = await turn();
      if (round >= 0) (which === 'served' ? served : raw).push(ms);
    }
  }
  const median = (times: number[]) => percentile(times.sort((a, b) => a - b), 50);
  return { served: median(served), raw: median(raw) };
}

await eachEngine('localTime', async (engine, databaseUrl) => {
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const serve = await startServe(databaseUrl, { AGGREGATE_CACHE_MB: '0' });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  // As the service's sessions are set (src/db/pool.ts).
  await client.query(`set timezone = 'UTC'; set jit = off`);
  const aggregate = `/api/v1/data/aggregate/?station=${station}&period=day`;
  // An instant after the year was loaded: as of it the archive holds what it holds now.
  const asOf = new Date().toISOString();
  const byDay = (zone: string, stats: string) => `select date_trunc('day', ts, '${zone}'), ${stats} from readings where station_id = $1 group by 1 order by 1`;
  const cases: Case[] = [
    { what: 'day, Europe/Zurich (hourly rollup)', url: `${aggregate}&tz=Europe/Zurich`, raw: byDay('Europe/Zurich', defaultStats) },
    { what: 'day, Asia/Kolkata (readings)', url: `${aggregate}&tz=Asia/Kolkata`, raw: byDay('Asia/Kolkata', defaultStats) },
    { what: 'day percentiles, UTC', url: `${aggregate}&percentiles=${percentiles.join(',')}`, raw: byDay('UTC', percentileStats), target: 'not slower than raw' },
    { what: 'day percentiles, Europe/Zurich', url: `${aggregate}&tz=Europe/Zurich&percentiles=${percentiles.join(',')}`, raw: byDay('Europe/Zurich', percentileStats), target: 'not slower than raw' },
    // The same answer read the reference way, grouping the readings (as_of reads them so): the percentiles read per bucket off.
    { what: 'day percentiles, Europe/Zurich, as_of (grouped)', url: `${aggregate}&tz=Europe/Zurich&percentiles=${percentiles.join(',')}&as_of=${asOf}`, raw: byDay('Europe/Zurich', percentileStats) },
    { what: 'day percentiles, Asia/Kolkata (grouped)', url: `${aggregate}&tz=Asia/Kolkata&percentiles=${percentiles.join(',')}`, raw: byDay('Asia/Kolkata', percentileStats) },
    {
      what: 'profile hour_of_day, Europe/Zurich (hourly rollup)', url: `/api/v1/data/profile/?station=${station}&by=hour_of_day&tz=Europe/Zurich`,
      raw: `select extract(hour from ts at time zone 'Europe/Zurich')::int, count(temperature_c), avg(temperature_c), stddev_samp(temperature_c) from readings where station_id = $1 group by 1 order by 1`,
    },
    {
      what: 'profile hour_of_day with percentiles, Europe/Zurich', url: `/api/v1/data/profile/?station=${station}&by=hour_of_day&tz=Europe/Zurich&percentiles=${percentiles.join(',')}`,
      raw: `select extract(hour from ts at time zone 'Europe/Zurich')::int, count(temperature_c), avg(temperature_c), stddev_samp(temperature_c),
              percentile_cont(${fractions}) within group (order by temperature_c) from readings where station_id = $1 group by 1 order by 1`,
    },
  ];
  const results: Record<string, unknown>[] = [];
  try {
    for (const c of cases) {
      const { served, raw } = await measure(client, serve.url, station!, c);
      const ratio = +(served / raw).toFixed(2);
      results.push({ engine, what: c.what, runs, served_ms: +served.toFixed(1), raw_ms: +raw.toFixed(1), ratio, target: c.target ?? null, met: c.target ? ratio <= 1 : null });
      console.log(`${engine.padEnd(9)} ${c.what.padEnd(56)} served ${fmt(served, 0).padStart(5)} ms   raw SQL ${fmt(raw, 0).padStart(5)} ms   ratio ${ratio.toFixed(2)}${c.target ? `   target ${c.target}: ${ratio <= 1 ? 'met' : 'MISSED'}` : ''}`);
    }
  } finally {
    await client.end();
    await serve.stop();
  }
  return results;
});
