import type pg from 'pg';
import { percentileName, type AggregatePeriod } from '../core/params.js';
import { rollupMetrics, type RollupMetric } from '../reading.js';
import type { AsOf } from '../core/asOf.js';
import { cutsUtcHoursNow } from '../core/timeZone.js';
import { columnSql, columnsOf, type AggregateColumn } from './columns.js';
import { decimalOf, rawStatistics, statisticsColumns, type Statistics } from './statistics.js';
import { readingsSource } from '../core/readingsSource.js';

/** What a local aggregate is of (the fields of AggregateArgs it reads). */
export type LocalArgs = {
  stationId: string; period: AggregatePeriod; from?: string; to?: string; quality?: string; metrics?: readonly RollupMetric[]; asOf?: AsOf;
  tz?: string; percentiles?: readonly number[]; minCoverage?: number; statistics?: Statistics;
};

/** A period's start (epoch ms), count, columns, expected and coverage_pct. */
type PeriodRow = [number, number, ...(number | null)[]];

/**
 * Whether an aggregate is made here rather than from the UTC rollup levels: buckets of a zone other than
 * UTC (`tz`), percentiles, or a completeness threshold.
 */
export const isLocalAggregate = (args: LocalArgs) => Boolean(args.tz || args.percentiles?.length || args.minCoverage !== undefined);

/** Where a local aggregate's statistics are summed from. */
type Source = 'hourly' | 'readings';

/** The readings a local aggregate leaves out of a metric's statistics (qc=pass): epoch microseconds, and a bit per rollup metric. */
export type LeftOut = { us: number[]; mask: number[] };

/**
 * A bucket of the zone holding an instant `at`: an hour is the hour of the zone's clock holding it, as
 * an instant (at its own offset, so that a clock set back gives two hours); a day, week (from Monday) or
 * month starts at the zone's midnight.
 */
const bucketOf = (period: AggregatePeriod, at: string, zone: string) => (period === 'hour'
  ? `((date_trunc('hour', ${at} at time zone ${zone}) - ((${at} at time zone ${zone}) - (${at} at time zone 'UTC'))) at time zone 'UTC')`
  : `date_trunc('${period}', ${at}, ${zone})`);

/** The start of the bucket after the one starting at `bucket`: an hour on, or the zone's next midnight, Monday or 1st. */
const nextOf = (period: AggregatePeriod, bucket: string, zone: string) => (period === 'hour'
  ? `(${bucket} + interval '1 hour')`
  : `(((${bucket}) at time zone ${zone} + interval '1 ${period}') at time zone ${zone})`);

/**
 * The statement of a local aggregate's periods: one row per bucket of the zone holding readings of the
 * range (from_date and to_date are the zone's dates), oldest first, each with its label (ISO 8601 in
 * the zone with its offset then; for UTC as every answer gives instants), its start in epoch ms, count,
 * columns, expected and coverage_pct, then what the statement's snapshot says of the station, and
 * (hourly) whether every hour summed starts on a whole hour of the zone's clock.
 * - `hourly`: each of the hourly rollup's buckets summed into the zone's bucket holding it: exact while
 *   the zone's offset is a whole number of hours over the range, which the last column says. Percentiles
 *   are then read bucket by bucket from the readings of its span (percentileSpans).
 * - `readings`: grouped from the readings themselves, as the archive held them at args.asOf, less those
 *   of `leftOut`, percentiles with the rest: the reference the hourly form is held to.
 * A bucket whose coverage_pct is below args.minCoverage gives null for every statistic but the counts.
 */
function localStatement(args: LocalArgs, intervalSeconds: number, source: Source, leftOut?: LeftOut): pg.QueryConfig {
  const zone = args.tz ?? 'UTC';
  const columns = columnsOf(args.metrics, args.percentiles);
  const used = rollupMetrics.filter((m) => columns.some((c) => c.metric === m));
  const values: unknown[] = [args.stationId, args.from ?? null, args.to ?? null, args.quality ?? null, intervalSeconds, zone, args.minCoverage ?? null];
  const param = (value: unknown) => `$${values.push(value)}`;
  const z = '$6::text';
  const fractions = args.percentiles?.length ? param(`{${args.percentiles.map((p) => p / 100).join(',')}}`) : null;
  const rows = source === 'hourly' ? hourlyRows(args.period, used, z) : readingRows(args, used, z, fractions, param, leftOut);
  // From the hourly rollup, the periods hold every column but the percentiles, which are read per bucket after.
  const summed = source === 'hourly' ? columns.filter((c) => c.stat !== 'percentile') : columns;
  const spans = source === 'hourly' && fractions ? percentileSpans(used, fractions) : '';
  const threshold = (c: AggregateColumn, sql: string) => (c.stat === 'count' ? sql : `case when $7::float8 is null or coverage_pct >= $7::float8 then ${sql} end`);
  const valueOf = (c: AggregateColumn) => (spans && c.stat === 'percentile' ? `q.${c.metric}_pcts[${args.percentiles!.indexOf(c.percentile) + 1}]` : c.name);
  const label = args.tz ? `envmon_local_iso(bucket, ${z})` : `to_char(bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const text = `
    with range as (
      select coalesce(($2::date)::timestamp at time zone ${z}, '-infinity'::timestamptz) as lo,
             coalesce(($3::date + 1)::timestamp at time zone ${z}, 'infinity'::timestamptz) as hi
    ), periods as (
      select bucket, sum(n::float8) as n, ${summed.map((c) => `${columnSql(c, source === 'readings' ? args.statistics : 'exact')} as ${c.name}`).join(', ')},
             bool_and(whole) as whole
      from (${rows}) rows
      group by bucket
    ), covered as (
      select p.*, s.span_start, s.span_end, e.expected, case when e.expected > 0 then (floor(c.per_mille) + (c.per_mille - floor(c.per_mille) >= 0.5)::int) / 10 end as coverage_pct
      from periods p cross join range
        cross join lateral (select greatest(p.bucket, range.lo) as span_start, least(${nextOf(args.period, 'p.bucket', z)}, range.hi) as span_end) s
        cross join lateral (select ceil(extract(epoch from s.span_end - s.span_start) / $5::float8) as expected) e
        cross join lateral (select p.n / nullif(e.expected, 0) * 1000 as per_mille) c
    )
    select ${label} as label, date_part('epoch', bucket) * 1000, n, ${columns.map((c) => threshold(c, valueOf(c))).join(', ')}, expected, coverage_pct,
           (select settled_version::float8 from station_latest where station_id = $1),
           (exists (select 1 from rollup_backlog where station_id = $1))::int::float8,
           coalesce(bool_and(whole) over (), true)::int::float8
    from covered ${spans}
    order by bucket`;
  return { text, values, rowMode: 'array', types: labelAndDoubles } as pg.QueryConfig;
}

/**
 * The percentiles of each bucket of a period read from the readings of its span (the bucket cut by the
 * range) through the readings' index, one bucket at a time: each reading is read once and sorted only
 * within its bucket, with no zone conversion per reading, where grouping the readings sorts them all by
 * their bucket first. `q.<metric>_pcts` holds each metric's percentiles, in `fractions`' order.
 */
function percentileSpans(used: readonly RollupMetric[], fractions: string): string {
  return `cross join lateral (
      select ${used.map((m) => `percentile_cont(${fractions}::float8[]) within group (order by r.${m}) as ${m}_pcts`).join(', ')}
      from readings r
      where r.station_id = $1 and r.ts >= covered.span_start and r.ts < covered.span_end and ($4::text is null or r.quality_flag = $4)
    ) q`;
}

// The label is text; every other column a float8, printed by the database in its shortest exact form.
const labelAndDoubles = { getTypeParser: (oid: number) => (oid === 25 ? (value: string) => value : Number) } as unknown as pg.CustomTypesConfig;

/** The hourly rollup's rows of the range, each with the zone's bucket holding it and whether it starts on the zone's whole hour. */
function hourlyRows(period: AggregatePeriod, used: readonly RollupMetric[], z: string): string {
  return `
    select ${bucketOf(period, 'h.bucket', z)} as bucket, h.n, ${used.map((m) => statisticsColumns(m)).join(', ')},
           extract(minute from h.bucket at time zone ${z}) = 0 and extract(second from h.bucket at time zone ${z}) = 0 as whole
    from readings_hourly h cross join range
    where h.station_id = $1 and ($4::text is null or h.quality_flag = $4) and h.bucket >= range.lo and h.bucket < range.hi`;
}

/**
 * The readings of the range grouped by the zone's bucket, with the rollups' statistics (statistics.ts)
 * and each percentile asked for. In timestamp order, which the doubles of snapshots made before exact
 * sums were summed in and their bytes keep.
 */
function readingRows(args: LocalArgs, used: readonly RollupMetric[], z: string, fractions: string | null, param: (value: unknown) => string, leftOut?: LeftOut): string {
  const percentiles = args.percentiles ?? [];
  const source = readingsSource(args.asOf && param(args.asOf.iso), 'array[$1::text]', '(select lo from range)', '(select hi from range)');
  const [us, mask] = leftOut ? [param(`{${leftOut.us.join(',')}}`), param(`{${leftOut.mask.join(',')}}`)] : [];
  const valueOf = (m: RollupMetric) => (us ? `case when coalesce(q.failing, 0) & ${1 << rollupMetrics.indexOf(m)} = 0 then r.${m} end` : `r.${m}`);
  const failing = us ? `left join unnest(${us}::int8[], ${mask}::int[]) as q (us, failing) on (extract(epoch from r.ts) * 1000000)::int8 = q.us` : '';
  const statistics = used.map((m) => rawStatistics(m, args.statistics));
  const percentileArrays = fractions ? used.map((m) => `percentile_cont(${fractions}::float8[]) within group (order by ${m}) as ${m}_pcts`) : [];
  const named = fractions ? used.flatMap((m) => percentiles.map((p, k) => `g.${m}_pcts[${k + 1}] as ${percentileName(m, p)}`)) : [];
  // In bucket and timestamp order, which one sort gives and the grouping then keeps.
  return `
    select g.*${named.map((n) => `, ${n}`).join('')}, true as whole from (
      select bucket, count(*) as n${[...statistics, ...percentileArrays].map((s) => `, ${s}`).join('')}
      from (
        select ${bucketOf(args.period, 'r.ts', z)} as bucket, r.ts, ${used.length ? used.map((m) => `${valueOf(m)} as ${m}${decimalOf(m, valueOf(m), args.statistics)}`).join(', ') : 'null'}
        from ${source} ${failing} cross join range
        where r.station_id = $1 and r.ts >= range.lo and r.ts < range.hi and ($4::text is null or r.quality_flag = $4)
        order by bucket, r.ts
      ) readings
      group by bucket
    ) g`;
}

/** A local aggregate's rows (as AggregateRow), their labels, and what the statement's snapshot said of the station. */
export type LocalPeriods = { rows: PeriodRow[]; labels: string[]; seen?: { settledVersion: string | null; backlog: boolean } };

/**
 * The periods of a local aggregate, from `read` (a pool's or a connection's): from the hourly rollup when
 * the zone keeps whole hours (its offset now, and then over every hour summed, which the statement says),
 * else (and as of an instant or with readings left out) from the readings; percentiles always from the readings.
 */
export async function localPeriods(
  read: <R extends pg.QueryResultRow>(query: pg.QueryConfig) => Promise<R[]>, args: LocalArgs, intervalSeconds: number, leftOut?: LeftOut,
): Promise<LocalPeriods> {
  const fromReadings = Boolean(args.asOf || leftOut || cutsUtcHoursNow(args.tz));
  let rows = await read<(string | number | null)[]>(localStatement(args, intervalSeconds, fromReadings ? 'readings' : 'hourly', leftOut));
  if (!fromReadings && rows.some((row) => row.at(-1) === 0)) rows = await read<(string | number | null)[]>(localStatement(args, intervalSeconds, 'readings', leftOut));
  const first = rows[0];
  const seen = first && { settledVersion: first.at(-3) == null ? null : String(first.at(-3)), backlog: first.at(-2) === 1 };
  return { rows: rows.map((row) => row.slice(1, -3) as PeriodRow), labels: rows.map((row) => row[0] as string), seen };
}

/** The periods as AggregateResult JSON objects, comma-separated. */
export function localJson(periods: LocalPeriods, columns: readonly AggregateColumn[]): string {
  const names = ['count', ...columns.map((c) => c.name), 'expected', 'coverage_pct'];
  return periods.rows.map((row, i) => {
    const fields = row.slice(1).map((value, k) => `,"${names[k]}":${value === null || value === undefined ? 'null' : value}`);
    return `{"period_start":"${periods.labels[i]}"${fields.join('')}}`;
  }).join(',');
}
