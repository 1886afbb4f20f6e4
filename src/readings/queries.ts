import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { stationRow } from '../stations/queries.js';
import type { QualityFlag } from './quality.js';
import type { AggregatePeriod, CompareParam } from './schema.js';

const readingRow = z.object({
  ts: z.string(),
  temperature_c: z.number().nullable(),
  humidity_rh: z.number().nullable(),
  pressure_hpa: z.number().nullable(),
  altitude_m: z.number().nullable(),
  pm1_0: z.number().nullable(),
  pm2_5: z.number().nullable(),
  pm10: z.number().nullable(),
  co2_ppm: z.number().nullable(),
  co_ppm: z.number().nullable(),
  uv_index: z.number().nullable(),
  quality_flag: z.string(),
  firmware_version: z.string().nullable(),
  module_data: z.record(z.unknown()).nullable(),
});
export type ReadingRow = z.infer<typeof readingRow>;

const stationWithLatestRow = stationRow.extend({
  latest: readingRow.nullable(),
});
export type StationWithLatestRow = z.infer<typeof stationWithLatestRow>;

/**
 * Every station with its most recent reading, in one query: station_latest gives each station's newest
 * timestamp, and the reading is fetched by its primary key (station_id, ts).
 */
export async function listStationsWithLatest(db: CommonQueryMethods): Promise<readonly StationWithLatestRow[]> {
  return db.any(sql.type(stationWithLatestRow)`
    select s.station_id, s.name, s.location_name, s.altitude_m, s.latitude, s.longitude, s.status,
           to_jsonb(latest) as latest
    from stations s
    left join station_latest last on last.station_id = s.station_id
    -- LIMIT keeps the lateral a per-station primary-key lookup: without it the planner may flatten it
    -- into a hash join over every reading when the statistics are young.
    left join lateral (
      select * from readings r where r.station_id = s.station_id and r.ts = last.ts limit 1
    ) latest on true
    order by s.station_id
  `);
}

const readingColumns = sql.fragment`
  ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index,
  quality_flag, firmware_version, module_data`;

const flagFilter = (quality: QualityFlag | undefined) => (quality ? sql.fragment`and quality_flag = ${quality}` : sql.fragment``);

/**
 * The station's most recent reading, or null when it has none. Two short queries: the newest timestamp
 * from station_latest, then the reading at exactly that time, which a hypertable finds in one chunk.
 */
export async function findLatestReading(db: CommonQueryMethods, stationId: string): Promise<ReadingRow | null> {
  const ts = await db.maybeOneFirst(sql.type(z.object({ ts: z.string() }))`
    select ts from station_latest where station_id = ${stationId}
  `);
  if (!ts) return null;
  return db.maybeOne(sql.type(readingRow)`
    select ${readingColumns} from readings where station_id = ${stationId} and ts = ${ts}::timestamptz
  `);
}

const aggregateRow = z.object({
  period_start: z.string(),
  count: z.number(),
  temperature_c_mean: z.number().nullable(),
  temperature_c_min: z.number().nullable(),
  temperature_c_max: z.number().nullable(),
  humidity_rh_mean: z.number().nullable(),
  pressure_hpa_mean: z.number().nullable(),
  pm2_5_mean: z.number().nullable(),
});
export type AggregateRow = z.infer<typeof aggregateRow>;

const rollupOf: Record<AggregatePeriod, string> = {
  hour: 'readings_hourly',
  day: 'readings_daily',
  week: 'readings_weekly',
  month: 'readings_monthly',
};

/** `at + width` reckoned on the UTC calendar: a month or a day never stretches across a zone's clock change. */
const utcPlus = (at: FragmentSqlToken, width: FragmentSqlToken) => sql.fragment`((${at}) at time zone 'UTC' + ${width}) at time zone 'UTC'`;

export type AggregateArgs = { stationId: string; period: AggregatePeriod; from?: string; to?: string; quality?: QualityFlag };

/**
 * Mean, min, max and count per period from the rollups (never a scan of raw readings), exact for the
 * quality filter. Dates are whole UTC days, both inclusive. Hours and days align with dates; a week or
 * month cut by the range is summed from its days inside it, as a GROUP BY over the readings would give.
 */
function aggregateSql(args: AggregateArgs): FragmentSqlToken {
  // Dates are UTC days and bucket ends UTC arithmetic, named explicitly rather than left to the session's zone.
  const start = args.from ? sql.fragment`(${args.from}::date)::timestamp at time zone 'UTC'` : sql.fragment`'-infinity'::timestamptz`;
  const end = args.to ? sql.fragment`(${args.to}::date + 1)::timestamp at time zone 'UTC'` : sql.fragment`'infinity'::timestamptz`;
  const filter = sql.fragment`station_id = ${args.stationId} ${flagFilter(args.quality)}`;
  const rollup = sql.identifier([rollupOf[args.period]]);
  let source;
  if (args.period === 'hour' || args.period === 'day' || (!args.from && !args.to)) {
    source = sql.fragment`select * from ${rollup} where ${filter} and bucket >= ${start} and bucket < ${end}`;
  } else {
    const unit = args.period;
    const width = sql.fragment`${`1 ${unit}`}::interval`;
    source = sql.fragment`
      select * from ${rollup}
      where ${filter} and bucket >= ${start} and ${utcPlus(sql.fragment`bucket`, width)} <= ${end}
      union all
      select station_id, date_trunc(${unit}, bucket, 'UTC') as bucket, quality_flag, n,
        temperature_c_count, temperature_c_sum, temperature_c_min, temperature_c_max,
        humidity_rh_count, humidity_rh_sum, humidity_rh_min, humidity_rh_max,
        pressure_hpa_count, pressure_hpa_sum, pressure_hpa_min, pressure_hpa_max,
        pm2_5_count, pm2_5_sum, pm2_5_min, pm2_5_max,
        pm10_count, pm10_sum, pm10_min, pm10_max,
        co2_ppm_count, co2_ppm_sum, co2_ppm_min, co2_ppm_max
      from readings_daily
      where ${filter} and bucket >= ${start} and bucket < ${end}
        and (date_trunc(${unit}, bucket, 'UTC') < ${start} or ${utcPlus(sql.fragment`date_trunc(${unit}, bucket, 'UTC')`, width)} > ${end})`;
  }
  return sql.fragment`
    select bucket as period_start, sum(n)::bigint as count,
      sum(temperature_c_sum) / nullif(sum(temperature_c_count), 0) as temperature_c_mean,
      min(temperature_c_min) as temperature_c_min,
      max(temperature_c_max) as temperature_c_max,
      sum(humidity_rh_sum) / nullif(sum(humidity_rh_count), 0) as humidity_rh_mean,
      sum(pressure_hpa_sum) / nullif(sum(pressure_hpa_count), 0) as pressure_hpa_mean,
      sum(pm2_5_sum) / nullif(sum(pm2_5_count), 0) as pm2_5_mean
    from (${source}) rows
    group by bucket
  `;
}

/** The aggregate rows, for CSV. */
export async function aggregateReadings(db: CommonQueryMethods, args: AggregateArgs): Promise<readonly AggregateRow[]> {
  return db.any(sql.type(aggregateRow)`select * from (${aggregateSql(args)}) a order by period_start`);
}

const aggregateJsonRow = z.object({ count: z.number(), results: z.string() });

/**
 * The aggregate rows as a JSON array built by PostgreSQL, for the JSON answer: no per-row work in the
 * service, so the answer costs the same on the first request after a start or an upload as later.
 * Numbers print as PostgreSQL's shortest exact form, timestamps as ISO 8601 UTC with milliseconds.
 */
export async function aggregateReadingsJson(db: CommonQueryMethods, args: AggregateArgs): Promise<{ count: number; results: string }> {
  // row_to_json writes compact JSON with the columns in this order; ISO text sorts as time does.
  return db.one(sql.type(aggregateJsonRow)`
    select count(*)::int as count, '[' || coalesce(string_agg(row_to_json(r)::text, ',' order by r.period_start), '') || ']' as results
    from (
      select to_char(a.period_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as period_start, a.count,
        a.temperature_c_mean, a.temperature_c_min, a.temperature_c_max, a.humidity_rh_mean, a.pressure_hpa_mean, a.pm2_5_mean
      from (${aggregateSql(args)}) a
    ) r
  `);
}

/** The bucket widths compare chooses from, in seconds: the smallest giving at most 720 buckets. */
export const compareIntervals = [60, 300, 900, 3600, 10800, 21600, 86400];
export const maxCompareBuckets = 720;

export function compareInterval(hours: number): number {
  return compareIntervals.find((seconds) => Math.ceil((hours * 3600) / seconds) <= maxCompareBuckets) ?? 86400;
}

const compareRow = z.object({ timestamps: z.array(z.string()), series: z.record(z.array(z.number().nullable())) });
export type CompareRow = z.infer<typeof compareRow>;

/**
 * Each station's mean of `param` per bucket of `seconds`, aligned on the same buckets (UTC, whole
 * buckets ending with the current one), null where a station has no reading. Buckets of an hour or more
 * are summed from the hourly rollup; finer ones from the readings. One query for every station.
 */
export async function compareStations(
  db: CommonQueryMethods,
  args: { stationIds: string[]; param: CompareParam; hours: number; seconds: number; quality?: QualityFlag },
): Promise<CompareRow> {
  const buckets = Math.ceil((args.hours * 3600) / args.seconds);
  const interval = sql.fragment`make_interval(secs => ${args.seconds})`;
  const origin = sql.fragment`'2000-01-03 00:00:00+00'::timestamptz`;
  const first = sql.fragment`date_bin(${interval}, now(), ${origin}) - ${buckets - 1} * ${interval}`;
  const column = sql.identifier([args.param]);
  const means =
    args.seconds >= 3600
      ? sql.fragment`
        select station_id, date_bin(${interval}, bucket, ${origin}) as slot,
               sum(${sql.identifier([`${args.param}_sum`])}) / nullif(sum(${sql.identifier([`${args.param}_count`])}), 0) as mean
        from readings_hourly
        where station_id = any(${sql.array(args.stationIds, 'text')}) and bucket >= ${first} ${flagFilter(args.quality)}
        group by 1, 2`
      : sql.fragment`
        select station_id, date_bin(${interval}, ts, ${origin}) as slot, avg(${column}) as mean
        from readings
        where station_id = any(${sql.array(args.stationIds, 'text')}) and ts >= ${first} ${flagFilter(args.quality)}
        group by 1, 2`;
  return db.one(sql.type(compareRow)`
    with slots as (
      select ${first} + i * ${interval} as slot, i from generate_series(0, ${buckets - 1}) as i
    ),
    means as (${means}),
    series as (
      select s.station_id, array_agg(m.mean order by slots.i) as values
      from unnest(${sql.array(args.stationIds, 'text')}) as s (station_id)
      cross join slots
      left join means m on m.station_id = s.station_id and m.slot = slots.slot
      group by s.station_id
    )
    select
      (select array_agg(to_char(slot at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') order by i) from slots) as timestamps,
      (select jsonb_object_agg(station_id, values) from series) as series
  `);
}

/** Station ids among `ids` that do not exist, in the order given. */
export async function findUnknownStations(db: CommonQueryMethods, ids: string[]): Promise<string[]> {
  const unknown = await db.anyFirst(sql.type(z.object({ station_id: z.string() }))`
    select s.station_id from unnest(${sql.array(ids, 'text')}) with ordinality as s (station_id, i)
    where not exists (select 1 from stations t where t.station_id = s.station_id)
    order by s.i
  `);
  return [...unknown];
}
