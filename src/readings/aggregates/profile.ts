import type pg from 'pg';
import type { PgPool } from '../../db/pgPool.js';
import { parquetBuffer, type ParquetColumn } from '../../formats/parquet.js';
import { percentileName } from '../core/params.js';
import { cutsUtcHoursNow } from '../core/timeZone.js';
import type { QualityFlag, RollupMetric } from '../reading.js';
import { decimalOf, meanSql, rawStatistics, sdSql } from './statistics.js';

/** What a profile's slots are: the zone's hour of the day (0-23), day of the week (1-7 from Monday), month of the year (1-12). */
export const profileSlots = ['hour_of_day', 'day_of_week', 'month_of_year'] as const;
export type ProfileSlot = (typeof profileSlots)[number];

export type ProfileArgs = {
  stationId: string; param: RollupMetric; by: ProfileSlot; tz: string; from?: string; to?: string; quality?: QualityFlag;
  percentiles?: readonly number[];
};

/** One slot of a profile: its number, the metric's values counted, mean, sample standard deviation, and the percentiles asked for. */
export type ProfileRow = { slot: number; count: number; mean: number | null; sd: number | null; percentiles: (number | null)[] };

const slotOf: Record<ProfileSlot, string> = { hour_of_day: 'hour', day_of_week: 'isodow', month_of_year: 'month' };

/**
 * The statement of a profile: the metric's statistics per slot of the zone's calendar over the range (the
 * zone's dates), slots without values absent. From the hourly rollup, whose buckets each lie in one of the
 * zone's hours while its offset is a whole number of hours (the last column says whether they all did),
 * with the percentiles, which no rollup holds, grouped from the readings beside it; from the readings
 * alone for the other zones.
 */
function profileStatement(args: ProfileArgs, source: 'hourly' | 'readings'): pg.QueryConfig {
  const m = args.param;
  const values: unknown[] = [args.stationId, args.from ?? null, args.to ?? null, args.quality ?? null, args.tz];
  const fractions = args.percentiles?.length ? `$${values.push(`{${args.percentiles.map((p) => p / 100).join(',')}}`)}::float8[]` : null;
  const range = `
    select coalesce(($2::date)::timestamp at time zone $5::text, '-infinity'::timestamptz) as lo,
           coalesce(($3::date + 1)::timestamp at time zone $5::text, 'infinity'::timestamptz) as hi`;
  const slot = (at: string) => `extract(${slotOf[args.by]} from ${at} at time zone $5::text)::int`;
  const readings = `readings r cross join range
      where r.station_id = $1 and ($4::text is null or r.quality_flag = $4) and r.ts >= range.lo and r.ts < range.hi`;
  const percentiles = (fractions && `percentile_cont(${fractions}) within group (order by r.${m})`) ?? 'null::float8[]';
  const text = source === 'hourly'
    ? `
      with range as (${range}), slots as (
        select ${slot('h.bucket')} as slot, sum(h.${m}_count::float8) as count, ${meanSql(m, 'exact', 'h.')} as mean, ${sdSql(m, 'exact', 'h.')} as sd,
               bool_and(extract(minute from h.bucket at time zone $5::text) = 0 and extract(second from h.bucket at time zone $5::text) = 0) as whole
        from readings_hourly h cross join range
        where h.station_id = $1 and ($4::text is null or h.quality_flag = $4) and h.bucket >= range.lo and h.bucket < range.hi
        group by 1 having sum(h.${m}_count) > 0
      )
      select s.slot, s.count, s.mean, s.sd, ${fractions ? 'q.percentiles' : 'null::float8[] as percentiles'}, s.whole
      from slots s ${fractions ? `left join (select ${slot('r.ts')} as slot, ${percentiles} as percentiles from ${readings} group by 1) q using (slot)` : ''}
      order by 1`
    // The readings' statistics as a rollup row holds them (each decimal taken once, in a subquery kept
    // apart), then the mean and spread from those sums as from the rollup's.
    : `
      with range as (${range})
      select slot, ${m}_count::float8 as count, ${meanSql(m)} as mean, ${sdSql(m)} as sd, percentiles, true as whole
      from (
        select ${slot('r.ts')} as slot, ${rawStatistics(m)}, ${percentiles} as percentiles
        from (select r.ts, r.${m}${decimalOf(m, `r.${m}`)} from ${readings} offset 0) r
        group by 1 having count(r.${m}) > 0
      ) s
      group by slot, ${m}_count, percentiles order by 1`;
  return { text: `select *, exists (select 1 from rollup_backlog where station_id = $1) as waiting from (${text}) p`, values };
}

/** A profile and whether a backfill of the station waited for the rollups' refresh in its snapshot (readCurrent). */
export type Profile = { rows: ProfileRow[]; waiting: boolean };

/**
 * The profile's slots, from the hourly rollup where the zone keeps whole hours (its offset now, and then
 * over every hour summed, which the statement says; percentiles from the readings beside it), else from
 * the readings.
 */
export async function readProfile(pool: PgPool, args: ProfileArgs): Promise<Profile> {
  type Row = { slot: number; count: number; mean: number | null; sd: number | null; percentiles: number[] | null; whole: boolean; waiting: boolean };
  const fromReadings = cutsUtcHoursNow(args.tz);
  let rows = (await pool.read<Row>(profileStatement(args, fromReadings ? 'readings' : 'hourly'))).rows;
  if (!fromReadings && rows.some((row) => !row.whole)) rows = (await pool.read<Row>(profileStatement(args, 'readings'))).rows;
  return {
    rows: rows.map((row) => ({ slot: row.slot, count: row.count, mean: row.mean, sd: row.sd, percentiles: row.percentiles ?? [] })),
    waiting: rows.some((row) => row.waiting),
  };
}

/** The names of a profile's columns: slot, count, mean, sd, then each percentile as p05. */
export const profileColumns = (percentiles: readonly number[] = []) => ['slot', 'count', 'mean', 'sd', ...percentiles.map((p) => percentileName('', p).slice(1))];

/** A slot as the JSON answer gives it. */
export const profileResult = (row: ProfileRow, percentiles: readonly number[] = []) => ({
  slot: row.slot, count: row.count, mean: row.mean, sd: row.sd,
  ...Object.fromEntries(percentiles.map((p, k) => [percentileName('', p).slice(1), row.percentiles[k] ?? null])),
});

/** The profile as CSV text after `preamble` (ending in its header row); nulls are empty fields. */
export function profileCsv(rows: readonly ProfileRow[], preamble: string): string {
  return preamble + rows.map((r) => `${[r.slot, r.count, r.mean, r.sd, ...r.percentiles].map((v) => v ?? '').join(',')}\n`).join('');
}

/** The profile as a Parquet file: slot and count integers, the rest doubles; `metadata` in its key-value metadata. */
export function profileParquet(rows: readonly ProfileRow[], percentiles: readonly number[], metadata: Record<string, string>): Buffer {
  const columns: ParquetColumn[] = profileColumns(percentiles).map((name) => ({ name, kind: name === 'slot' || name === 'count' ? 'int64' : 'double', ...(name === 'slot' || name === 'count' ? { required: true } : {}) }));
  const values = [
    rows.map((r) => BigInt(r.slot)), rows.map((r) => BigInt(r.count)), rows.map((r) => r.mean), rows.map((r) => r.sd),
    ...percentiles.map((_, k) => rows.map((r) => r.percentiles[k] ?? null)),
  ];
  return parquetBuffer(columns, values, metadata);
}
