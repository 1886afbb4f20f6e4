// The station-year of bench/quality: one reading a minute from 2025-01-01 (BENCH_QUALITY_MINUTES, 525,600)
// written by one insert ... generate_series into a database the service's `envmon migrate` made: daily and
// seasonal cycles with noise for temperature, humidity, pressure, PM2.5, PM10 and CO2; a few spikes; flat
// stretches of several hours (stuck sensors); values missing now and then; gaps of several hours; and an
// outage of a few days that bench/quality's backfills fill (BENCH_QUALITY_RUNS batches of 1,000 and two more).
import pg from 'pg';
import type { Engine } from '../src/config.js';
import { yearMinutes, yearStart } from './dataset.js';
import { stationsWithKeys, withClient } from './lib.js';

export const fixtureMinutes = Number(process.env.BENCH_QUALITY_MINUTES ?? yearMinutes);
export const fixtureStation = 'year-1';
export const batchSize = 1_000;
const outageBatches = Number(process.env.BENCH_QUALITY_RUNS ?? 5);
export const metrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'pm10', 'co2_ppm'] as const;
export type Metric = (typeof metrics)[number];


// The fixture's layout, in minutes from its start (reading i is at yearStart + i minutes).
export const minutesPerDay = 1_440;
/** The first minute of the day a fraction of the way through the fixture. */
export const dayAt = (fraction: number) => Math.floor((fixtureMinutes * fraction) / minutesPerDay) * minutesPerDay;
export type Span = { from: number; to: number };
const spanAt = ([fraction, at, minutes]: [number, number, number]): Span => ({ from: dayAt(fraction) + at, to: dayAt(fraction) + at + minutes });
/** No reading: a station off the air for several hours. */
export const gaps = ([[0.16, 120, 180], [0.49, 600, 300], [0.74, 1_200, 420], [0.9, 60, 480]] as [number, number, number][]).map(spanAt);
/** No reading for whole days mid-year, which part e's backfills fill, one batch a turn (two turns unmeasured). */
export const outage: Span = { from: dayAt(0.52), to: dayAt(0.52) + (Math.ceil(((outageBatches + 2) * batchSize) / minutesPerDay) + 1) * minutesPerDay };
/** A sensor repeating its first value, for longer than its flat-line test's suspect threshold (src/readings/core/qc/config.ts). */
export const stuck: Partial<Record<Metric, Span[]>> = {
  temperature_c: ([[0.11, 540, 300], [0.58, 600, 330]] as [number, number, number][]).map(spanAt),
  humidity_rh: [spanAt([0.27, 0, 480])],
  pressure_hpa: [spanAt([0.41, 300, 840])],
  pm2_5: [spanAt([0.66, 120, 780])],
  co2_ppm: [spanAt([0.8, 60, 420])],
};
const within = (spans: Span[]) => spans.map((s) => `(i >= ${s.from} and i < ${s.to})`).join(' or ') || 'false';
/** The minute whose value a sensor gives at minute i: its own, or a stuck stretch's first. */
const valueMinute = (metric: Metric) => `case ${(stuck[metric] ?? []).map((s) => `when i >= ${s.from} and i < ${s.to} then ${s.from}::bigint `).join('')}else i end`;

/**
 * Readings $2 .. $3 - 1 of the fixture (from $1), every minute, as a station measures them: seasonal and
 * daily cycles with noise (deterministic), spikes (temperature +12 °C, PM +250 µg/m³, CO2 +350 ppm, each
 * once in about a week), stuck stretches, and values missing (a temperature now and then, the PM sensor's
 * dropouts, CO2 off for ten minutes every few days).
 */
const seriesSql = `
  select i, ts, temperature_c, humidity_rh, pressure_hpa, 210 as altitude_m, round(pm2_5 * 0.7, 1) as pm1_0, pm2_5, pm10, co2_ppm, 0.3 as co_ppm, 2.5 as uv_index
  from (
    select i, $1::timestamptz + i * interval '1 minute' as ts,
      case when i % 6007 = 17 then null else round((10 - 9 * cos(2 * pi() * jt / 525600.0) + 5 * sin(2 * pi() * (jt - 540) / 1440.0)
        + ((jt * 7919) % 101 - 50) / 100.0 + case when i % 10007 = 5003 then 12 else 0 end)::numeric, 2) end as temperature_c,
      round(least(100, greatest(5, 70 + 5 * cos(2 * pi() * jh / 525600.0) - 20 * sin(2 * pi() * (jh - 540) / 1440.0)
        + ((jh * 104729) % 61 - 30) / 10.0))::numeric, 1) as humidity_rh,
      round((1013 + 8 * sin(2 * pi() * jp / 7632.0) + 4 * sin(2 * pi() * jp / 24480.0) + ((jp * 7907) % 21 - 10) / 50.0)::numeric, 1) as pressure_hpa,
      case when i % 997 = 13 then null else pm end as pm2_5,
      case when i % 997 = 13 then null else round(pm * 1.6 + ((jm * 7919) % 31) / 10.0, 1) end as pm10,
      case when i % 4999 < 10 then null else round((425 + 25 * sin(2 * pi() * (jc - 300) / 1440.0) + (jc * 7901) % 11
        + case when i % 15013 = 7000 then 350 else 0 end)::numeric) end as co2_ppm
    from generate_series($2::bigint, $3::bigint - 1) as i,
      lateral (select ${valueMinute('temperature_c')} as jt, ${valueMinute('humidity_rh')} as jh, ${valueMinute('pressure_hpa')} as jp,
        ${valueMinute('pm2_5')} as jm, ${valueMinute('co2_ppm')} as jc) j,
      lateral (select round((greatest(0, 9 + 5 * sin(2 * pi() * (jm - 1200) / 1440.0) + ((jm * 104729) % 41) / 10.0)
        + case when i % 12011 = 611 then 250 else 0 end)::numeric, 1) as pm) p
  ) v`;

const readingColumns = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'] as const;

/** Readings `from` .. `to` - 1 of the fixture as a station posts them (JSON, missing values null). */
export async function postedReadings(client: pg.Client, from: number, to: number): Promise<Record<string, unknown>[]> {
  const { rows } = await client.query<Record<string, number | null>>(`
    select extract(epoch from ts)::float8 * 1000 as ms, ${readingColumns.map((c) => `${c}::float8`).join(', ')} from (${seriesSql}) s order by i`,
  [new Date(yearStart).toISOString(), from, to]);
  return rows.map((r) => ({
    timestamp: new Date(r.ms!).toISOString(), ...Object.fromEntries(readingColumns.map((c) => [c, r[c]])), firmware_version: '2.4.1',
  }));
}

/**
 * The station-year, written by one insert ... generate_series (the portable engine's statement triggers
 * build its rollups; timescale's are refreshed after), recorded_at its own timestamp; then the station's
 * marks as ingest would leave them (settled up to the day of its newest reading), and VACUUM ANALYZE.
 */
export async function loadFixture(databaseUrl: string, engine: Engine): Promise<{ seconds: number; readings: number; key: string }> {
  const [key] = await stationsWithKeys(databaseUrl, [fixtureStation]);
  return withClient(databaseUrl, async (client) => {
    const started = performance.now();
    await client.query(`
      insert into readings (station_id, ts, ${readingColumns.join(', ')}, quality_flag, firmware_version, module_data, recorded_at)
      select $4, ts, ${readingColumns.join(', ')}, 'ok', '2.4.1', null, ts
      from (${seriesSql}) s where not (${within([...gaps, outage])}) order by i`,
    [new Date(yearStart).toISOString(), 0, fixtureMinutes, fixtureStation]);
    // What the readings store does in its transaction, for rows that bypassed it (as bench/dataset).
    await client.query(`insert into station_latest (station_id, ts, first_ts, settled_before)
      select station_id, max(ts), min(ts), date_trunc('day', max(ts), 'UTC') from readings where station_id = $1 group by 1
      on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts), first_ts = least(station_latest.first_ts, excluded.first_ts),
        settled_before = excluded.settled_before, version = excluded.version`, [fixtureStation]);
    if (engine === 'timescale') await client.query('call envmon_refresh_rollups()');
    await client.query('vacuum (analyze) readings');
    const seconds = (performance.now() - started) / 1000;
    const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from readings where station_id = $1`, [fixtureStation]);
    return { seconds, readings: rows[0]!.n, key: key! };
  });
}

