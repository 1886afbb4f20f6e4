import { sql, type CommonQueryMethods } from 'slonik';
import type pg from 'pg';
import type { PgPool } from '../../db/pool.js';
import type { CopyQuery } from '../../db/copyOut.js';
import { copyRowOf, readCopyRow } from '../../db/copyRow.js';
import { readInOneSnapshot } from '../../db/oneSnapshot.js';
import { z } from 'zod';
import { rollupMetrics, type CompareParam, type QualityFlag, type RollupMetric } from '../reading.js';
import { columnSql, columnsKey, columnsOf, type AggregateColumn } from './columns.js';
import { isLocalAggregate, localJson, localPeriods } from './local.js';
import type { AsOf } from '../core/asOf.js';
import type { AggregatePeriod } from '../core/params.js';
import { offsetMinutes } from '../core/timeZone.js';
import { qcStreams, type QcConfig } from '../core/qc/config.js';
import { qcFlag } from '../core/qc/qartod.js';
import { flaggedReadings } from '../core/qc/series.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { decimalOf, rawStatistics, statisticsColumns, type Statistics } from './statistics.js';
import { readingsSource } from '../core/readingsSource.js';

const flagFilter = (quality: QualityFlag | undefined) => (quality ? sql.fragment`and quality_flag = ${quality}` : sql.fragment``);

const rollupOf: Record<AggregatePeriod, string> = {
  hour: 'readings_hourly',
  day: 'readings_daily',
  week: 'readings_weekly',
  month: 'readings_monthly',
};

export type AggregateArgs = {
  stationId: string; period: AggregatePeriod; from?: string; to?: string; quality?: QualityFlag;
  /** The metrics to give count, mean, min, max and sd of; the default columns when absent. */
  metrics?: readonly RollupMetric[];
  /** The instant the archive is read as of: the periods are then summed from its readings as they were. */
  asOf?: AsOf;
  /**
   * qc=pass: the station's quality-control configuration; each metric's statistics then leave out the
   * readings whose aggregate QARTOD flag for it is not pass (metrics without tests keep every value).
   */
  qcPass?: QcConfig;
  /** With qc=pass, the station's series facts kept between reads. */
  spacings?: SeriesSpacings;
  /** An IANA zone other than UTC: buckets are its hours, days, weeks and months, and the dates its own (local.ts). */
  tz?: string;
  /** Whole percentiles of each metric given, per bucket (local.ts). */
  percentiles?: readonly number[];
  /** Statistics of a bucket covered less than this (percent) are null (local.ts). */
  minCoverage?: number;
  /** How means and spreads are computed (statistics.ts): `exact` unless a snapshot made before it pins another. */
  statistics?: Statistics;
};

/** The readings some metric of which does not pass, as epoch microseconds and a bit per rollup metric. */
type Failing = { us: number[]; mask: number[] };

/** Which readings of the range qc=pass leaves out, of which metrics: read on `client`, in the snapshot the aggregate is then read in. */
async function failingReadings(client: pg.ClientBase, args: AggregateArgs): Promise<Failing> {
  // A zone's dates start up to a day either side of UTC's: flagged over both (a reading's flags are its own whatever the range).
  const margin = args.tz ? 86_400_000 : 0;
  const range = {
    from: args.from ? new Date(Date.parse(`${args.from}T00:00:00Z`) - margin).toISOString() : undefined,
    to: args.to ? new Date(Date.parse(`${args.to}T00:00:00Z`) + 86_400_000 + margin).toISOString() : undefined,
  };
  // The rolled-up metrics with tests; the others keep every value.
  const tested = qcStreams.flatMap((s, index) => {
    const bit = rollupMetrics.indexOf(s.field as RollupMetric);
    return bit >= 0 && Object.keys(args.qcPass!.streams[s.stream]?.qartod ?? {}).length > 0 ? [{ index, bit: 1 << bit }] : [];
  });
  const failing: Failing = { us: [], mask: [] };
  // Batch by batch: memory holds one batch of flags whatever the range.
  for await (const batch of flaggedReadings(client, args.stationId, args.qcPass!, tested.map((t) => t.index), range, { asOf: args.asOf, spacings: args.spacings })) {
    for (let i = 0; i < batch.times.length; i++) {
      let mask = 0;
      for (let t = 0; t < tested.length; t++) if (batch.flags[t]!.aggregate[i] !== qcFlag.pass) mask |= tested[t]!.bit;
      if (mask) {
        failing.us.push(Math.round(batch.times[i]! * 1000));
        failing.mask.push(mask);
      }
    }
  }
  return failing;
}

/** How an aggregate's statements are run: on a pool, or on one connection in one snapshot. */
type Reader = {
  rows: <R extends pg.QueryResultRow>(query: pg.QueryConfig) => Promise<R[]>;
  copyRow: (query: CopyQuery) => Promise<(Buffer | null)[] | null>;
};

/**
 * Runs `read` on the pool; with qc=pass, on one connection in one snapshot after reading the readings it
 * leaves out there, so that the flags and the sums are of the same readings.
 */
function withFailing<T>(pool: PgPool, args: AggregateArgs, read: (reader: Reader, failing?: Failing) => Promise<T>): Promise<T> {
  if (!args.qcPass) return read({ rows: async <R extends pg.QueryResultRow>(query: pg.QueryConfig) => (await pool.read<R>(query)).rows, copyRow: (query) => copyRowOf(pool, query) });
  return readInOneSnapshot(pool, async (client) => read(
    { rows: async <R extends pg.QueryResultRow>(query: pg.QueryConfig) => (await client.query<R>(query)).rows, copyRow: (query) => readCopyRow(client, query) },
    await failingReadings(client, args),
  ));
}

const arrayText = (values: number[]) => `{${values.join(',')}}`;

/**
 * One period's statistics: period_start in epoch milliseconds, count, the columns' values in their order,
 * expected and coverage_pct.
 */
export type AggregateRow = [number, number, ...(number | null)[]];

// $1 station, $2 first date, $3 last date (both inclusive whole UTC days, either null), $4 quality flag or
// null, $5 the station's reporting interval in seconds, $6 the first period wanted ('-infinity' for all:
// a kept answer's later periods are computed again from one), $7 the first period after those wanted
// ('infinity' for all).
const rangeStart = `coalesce(($2::date)::timestamp at time zone 'UTC', '-infinity')`;
const rangeEnd = `coalesce(($3::date + 1)::timestamp at time zone 'UTC', 'infinity')`;
const rowFilter = `station_id = $1 and ($4::text is null or quality_flag = $4) and bucket >= $6::timestamptz and bucket < $7::timestamptz`;
/** `at + 1 unit` on the UTC calendar: a month or a day never stretches across a zone's clock change. */
const utcPlusOne = (at: string, unit: string) => `((${at}) at time zone 'UTC' + interval '1 ${unit}') at time zone 'UTC'`;

/**
 * The periods of an aggregate, one row each with its statistics named as the answer names them: from
 * the rollups (never a scan of raw readings), exact for the quality filter. Hours and days align with
 * dates; a week or month cut by the range is summed from its days inside it, as a GROUP BY over the
 * readings would give. `expected` counts the readings the station's interval implies for the part of
 * the period inside the range, rounded up, and `coverage_pct` is count against it to one decimal,
 * rounded half up.
 */
function periodsSql(period: AggregatePeriod, cut: boolean, columns: readonly AggregateColumn[], raw?: RawSource): string {
  const rollup = rollupOf[period];
  const used = rollupMetrics.filter((m) => columns.some((c) => c.metric === m));
  const statistics = raw?.statistics ?? 'exact';
  const rollupColumns = used.map((m) => statisticsColumns(m)).join(', ');
  const source = raw ? rawRollupSql(period, used, raw) : !cut
    ? `select bucket, n, ${rollupColumns} from ${rollup} where ${rowFilter} and bucket >= ${rangeStart} and bucket < ${rangeEnd}`
    : `select bucket, n, ${rollupColumns} from ${rollup}
         where ${rowFilter} and bucket >= ${rangeStart} and ${utcPlusOne('bucket', period)} <= ${rangeEnd}
       union all
       select date_trunc('${period}', bucket, 'UTC'), n, ${rollupColumns} from readings_daily
         where ${rowFilter} and bucket >= ${rangeStart} and bucket < ${rangeEnd}
           and (date_trunc('${period}', bucket, 'UTC') < ${rangeStart} or ${utcPlusOne(`date_trunc('${period}', bucket, 'UTC')`, period)} > ${rangeEnd})`;
  // In epoch seconds (doubles, ±Infinity for an open end): a period's end is its start plus a fixed
  // length, but for months, whose length is looked up.
  const periodEnd = period === 'month' ? `date_part('epoch', ${utcPlusOne('bucket', period)})` : `start + ${periodSeconds[period]}`;
  const seconds = `least(${periodEnd}, date_part('epoch', ${rangeEnd})) - greatest(start, date_part('epoch', ${rangeStart}))`;
  return `
    select bucket, start, n, ${columns.map((c) => c.name).join(', ')}, expected,
           case when expected > 0 then (floor(per_mille) + (per_mille - floor(per_mille) >= 0.5)::int) / 10 end as coverage_pct
    from (
      select g.*, e.expected, g.n / nullif(e.expected, 0) * 1000 as per_mille
      from (
        select date_part('epoch', bucket) as start, bucket, sum(n::float8) as n, ${columns.map((c) => `${columnSql(c, statistics)} as ${c.name}`).join(', ')}
        from (${source}) rows
        group by bucket
      ) g
      cross join lateral (select ceil((${seconds}) / $5::float8) as expected) e
    ) periods`;
}

/**
 * Where an aggregate is summed from raw readings rather than read from the rollups: the parameter holding
 * the instant the archive is read as of, and those holding the readings qc=pass leaves out (epoch
 * microseconds and a bit per rollup metric).
 */
type RawSource = { asOfParam?: string; failingParams?: readonly [string, string]; statistics?: Statistics };

/**
 * What a rollup holds for the periods of the range, summed from the readings with the same statistics
 * (statistics.ts): as the archive held them at an instant (whatever the rollups say now), and with
 * qc=pass less each metric's values that did not pass. A period cut by the range sums only the readings
 * inside it, as the rollups' cut periods do.
 */
function rawRollupSql(period: AggregatePeriod, metrics: readonly RollupMetric[], raw: RawSource): string {
  // Hours, days and weeks by arithmetic from a UTC midnight (a Monday for weeks): the same buckets as
  // date_trunc in the UTC zone, without a zone conversion per reading. Months have no fixed length.
  const bucket = period === 'month' ? `date_trunc('month', ts, 'UTC')`
    : `date_bin('${period === 'week' ? '7 days' : `1 ${period}`}', ts, '2000-01-03 00:00:00+00')`;
  const statistics = raw.statistics ?? 'exact';
  const source = { from: readingsSource(raw.asOfParam, 'array[$1::text]', rangeStart, rangeEnd), where: `r.station_id = $1 and r.ts >= ${rangeStart} and r.ts < ${rangeEnd}` };
  const [us, mask] = raw.failingParams ?? [];
  const valueOf = (m: RollupMetric) => (us ? `case when coalesce(q.failing, 0) & ${1 << rollupMetrics.indexOf(m)} = 0 then r.${m} end` : `r.${m}`);
  const values = metrics.map((m) => `${valueOf(m)} as ${m}${decimalOf(m, valueOf(m), statistics)}`);
  const failing = us ? `left join unnest(${us}::int8[], ${mask}::int[]) as q (us, failing) on (extract(epoch from r.ts) * 1000000)::int8 = q.us` : '';
  // Exact sums need no order; the doubles of snapshots made before them were summed in timestamp order,
  // which their bytes keep. Either way the subquery stays apart, so each decimal is taken once.
  const order = statistics === 'exact' ? 'offset 0' : 'order by r.ts';
  return `
    select bucket, n, ${metrics.map((m) => statisticsColumns(m, statistics)).join(', ')} from (
      select ${bucket} as bucket, count(*) as n${metrics.map((m) => `, ${rawStatistics(m, statistics)}`).join('')}
      from (
        select r.ts, ${values.length ? values.join(', ') : 'null'}
        from ${source.from} ${failing}
        where ${source.where} and ($4::text is null or r.quality_flag = $4)
        ${order}
      ) readings
      group by 1
    ) periods
    where bucket >= $6::timestamptz and bucket < $7::timestamptz`;
}

const periodSeconds: Record<Exclude<AggregatePeriod, 'month'>, number> = { hour: 3600, day: 86_400, week: 7 * 86_400 };

// Hours are planned for each request's station: a generic plan, made once for any station, reads the
// timescale hourly rollup by its bucket index and filters every station's rows, and planning costs
// little beside 8,760 buckets a year.
const statementName = (kind: string, period: AggregatePeriod, cut: boolean, metrics: readonly RollupMetric[] | undefined) =>
  period === 'hour' ? undefined : `envmon_aggregate_${kind}_${period}${cut ? '_cut' : ''}_${columnsKey(metrics)}`;

const isCut = (args: AggregateArgs) => args.period !== 'hour' && args.period !== 'day' && Boolean(args.from || args.to);
const valuesOf = (args: AggregateArgs, intervalSeconds: number, since = '-infinity', until = 'infinity') =>
  [args.stationId, args.from ?? null, args.to ?? null, args.quality ?? null, intervalSeconds, since, until];

/**
 * The statement of an aggregate's rows (CSV, Parquet): one prepared statement per period, range shape and
 * set of columns. Each row ends with what the statement's snapshot says of the station (StationSeen:
 * the settled version, and 1 for a backlog), computed once.
 */
function rowsQuery(args: AggregateArgs, intervalSeconds: number, failing?: Failing): pg.QueryConfig {
  const columns = columnsOf(args.metrics);
  const cut = isCut(args);
  const values: unknown[] = valuesOf(args, intervalSeconds);
  const raw = rawSourceOf(args, values, failing);
  return {
    // From raw readings: planned for its range, as a read of raw readings should be.
    name: raw ? undefined : statementName('rows', args.period, cut, args.metrics),
    text: `
      select start * 1000, n, ${columns.map((c) => c.name).join(', ')}, expected, coverage_pct,
             (select settled_version::float8 from station_latest where station_id = $1),
             (exists (select 1 from rollup_backlog where station_id = $1))::int::float8
      from (${periodsSql(args.period, cut, columns, raw)}) p
      order by start`,
    values,
    rowMode: 'array',
    types: doubles,
  } as pg.QueryConfig;
}

// Every column of the rows is a float8, printed by the database in its shortest exact form.
const doubles = { getTypeParser: () => Number } as unknown as pg.CustomTypesConfig;

/**
 * The statement of an aggregate's JSON: the database writes each period as an AggregateResult object,
 * its numbers in the shortest form that reads back exactly, and joins them. A year of hourly periods
 * (115,000 numbers) then reaches the service as one text, rather than as values the driver parses one
 * by one and the service prints again, holding the event loop (bench/aggregate). Every value is finite (readings are within ±1e9), so
 * each prints as a JSON number (1e-05 and -0 are JSON too). The periods come in two parts, split at $8:
 * those before it, which a kept answer can reuse while they stay settled, and the rest; and with them
 * what this statement's snapshot says of the station (StationSeen).
 */
function jsonQuery(args: AggregateArgs, intervalSeconds: number, since: string, split: string, until = 'infinity', failing?: Failing): pg.QueryConfig {
  const columns = columnsOf(args.metrics);
  const cut = isCut(args);
  const values: unknown[] = [...valuesOf(args, intervalSeconds, since, until), split];
  const raw = rawSourceOf(args, values, failing);
  const field = (name: string, value: string) => `',"${name}":' || coalesce((${value})::text, 'null')`;
  const record = [
    `'{"period_start":"' || to_char(bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`,
    field('count', 'n'),
    ...columns.map((c) => field(c.name, c.name)),
    field('expected', 'expected'),
    field('coverage_pct', 'coverage_pct'),
    `'}'`,
  ].join(' || ');
  const part = (name: string, test: string) =>
    `count(*) filter (where ${test})::int as ${name}_periods,
     coalesce(string_agg(${record}, ',' order by start) filter (where ${test}), '') as ${name}_results`;
  return {
    name: raw ? undefined : statementName('json', args.period, cut, args.metrics),
    text: `select ${part('settled', 'bucket < $8::timestamptz')}, ${part('later', 'bucket >= $8::timestamptz')},
             (select settled_version::text from station_latest where station_id = $1) as settled_version,
             exists (select 1 from rollup_backlog where station_id = $1) as backlog
           from (${periodsSql(args.period, cut, columns, raw)}) p`,
    values,
  };
}

/** The raw source of an aggregate read as of an instant or with qc=pass, its parameters added to `values`. */
function rawSourceOf(args: AggregateArgs, values: unknown[], failing: Failing | undefined): RawSource | undefined {
  if (!args.asOf && !failing) return undefined;
  const param = (value: unknown) => `$${values.push(value)}`;
  return {
    asOfParam: args.asOf ? param(args.asOf.iso) : undefined,
    failingParams: failing ? [param(arrayText(failing.us)), param(arrayText(failing.mask))] : undefined,
    statistics: args.statistics,
  };
}

/** Periods of an aggregate as the JSON text of their AggregateResult items, comma-separated, and how many. */
export type JsonPeriods = { periods: number; results: Buffer };

/**
 * The aggregate rows, from a prepared statement: no row is validated one by one (the SQL fixes its types);
 * and what the statement's snapshot said of the station, when it gave any row.
 */
export async function aggregateReadings(
  pool: PgPool, args: AggregateArgs, intervalSeconds: number,
): Promise<{ rows: AggregateRow[]; seen?: StationSeen; labels?: string[] }> {
  if (isLocalAggregate(args)) return withFailing(pool, args, (reader, failing) => localPeriods(reader.rows, args, intervalSeconds, failing));
  const rows = await withFailing(pool, args, (reader, failing) => reader.rows<AggregateRow>(rowsQuery(args, intervalSeconds, failing)));
  const first = rows[0];
  const seen = first && { settledVersion: first.at(-2) == null ? null : String(first.at(-2)), backlog: first.at(-1) === 1 };
  for (const row of rows) row.length -= 2;
  return { rows, seen };
}

/**
 * What a statement's snapshot says of a station: its settled version (station_latest, null without
 * readings), and whether a backfill of it waits for the rollups' refresh (rollup_backlog).
 */
export type StationSeen = { settledVersion: string | null; backlog: boolean };

/** The first and last reading of a station, in epoch milliseconds. */

/**
 * The aggregate's periods from `since` (ISO; '-infinity' for all) as AggregateResult JSON, in two parts:
 * those before `split`, and the rest; and what the snapshot they were read in says of the station. Hourly periods, planned for each request anyway and the largest
 * answer (a year is 3.7 MB), come as bytes through COPY; the others from their prepared statement.
 */
export function aggregateJsonPeriods(
  pool: PgPool, args: AggregateArgs, intervalSeconds: number, since: string, split: string,
): Promise<{ settled: JsonPeriods; later: JsonPeriods; seen?: StationSeen }> {
  return withFailing(pool, args, (reader, failing) => jsonPeriods(reader, args, intervalSeconds, since, split, failing));
}

async function jsonPeriods(
  reader: Reader, args: AggregateArgs, intervalSeconds: number, since: string, split: string, failing: Failing | undefined,
): Promise<{ settled: JsonPeriods; later: JsonPeriods; seen?: StationSeen }> {
  if (isLocalAggregate(args)) {
    // Made whole each time it is made: no part of it is kept as settled.
    const periods = await localPeriods(reader.rows, args, intervalSeconds, failing);
    return {
      settled: { periods: 0, results: Buffer.alloc(0) },
      later: { periods: periods.rows.length, results: Buffer.from(localJson(periods, columnsOf(args.metrics, args.percentiles))) },
      seen: periods.seen,
    };
  }
  if (args.period === 'hour') {
    const row = await reader.copyRow(jsonQuery(args, intervalSeconds, since, split, 'infinity', failing) as CopyQuery);
    const [settledPeriods, settledResults, laterPeriods, laterResults, settledVersion, backlog] = row!;
    return {
      settled: { periods: settledPeriods!.readInt32BE(0), results: settledResults! },
      later: { periods: laterPeriods!.readInt32BE(0), results: laterResults! },
      seen: { settledVersion: settledVersion?.toString() ?? null, backlog: backlog![0] === 1 },
    };
  }
  const row = (await reader.rows<{ settled_periods: number; settled_results: string; later_periods: number; later_results: string; settled_version: string | null; backlog: boolean }>(
    jsonQuery(args, intervalSeconds, since, split, 'infinity', failing),
  ))[0]!;
  return {
    settled: { periods: row.settled_periods, results: Buffer.from(row.settled_results) },
    later: { periods: row.later_periods, results: Buffer.from(row.later_results) },
    seen: { settledVersion: row.settled_version, backlog: row.backlog },
  };
}

/** Prepares an aggregate's JSON statement, the one read most, on a connection already held. */
export async function prepareAggregate(client: pg.ClientBase, args: AggregateArgs): Promise<void> {
  await client.query(jsonQuery(args, 60, '-infinity', 'infinity'));
}

/** The bucket widths compare chooses from, in seconds: the smallest giving at most 720 buckets. */
export const compareIntervals = [60, 300, 900, 3600, 10800, 21600, 86400];
export const maxCompareBuckets = 720;

export function compareInterval(hours: number): number {
  return compareIntervals.find((seconds) => Math.ceil((hours * 3600) / seconds) <= maxCompareBuckets) ?? 86400;
}

const compareRow = z.object({ timestamps: z.array(z.string()), series: z.record(z.array(z.number().nullable())), waiting: z.boolean() });
export type CompareRow = z.infer<typeof compareRow>;

/**
 * Each station's mean of `param` per bucket of `seconds`, aligned on the same buckets (UTC, whole
 * buckets ending with the current one), null where a station has no reading. Buckets of an hour or more
 * are summed from the hourly rollup; finer ones from the readings. One query for every station, which
 * also says whether a backfill of one of them waits for the rollups' refresh in its snapshot (`waiting`:
 * timescale's hourly rollup does not hold it yet).
 */
export async function compareStations(db: CommonQueryMethods, args: CompareArgs): Promise<CompareRow> {
  return db.one(compareQuery(args));
}

export type CompareArgs = {
  stationIds: string[]; param: CompareParam; hours: number; seconds: number; quality?: QualityFlag; asOf?: AsOf;
  /** An IANA zone other than UTC: buckets start on its clock's minutes (an hour at :30 of UTC in Newfoundland), and are named in it. */
  tz?: string;
  /** Where the buckets end when not at `asOf` (a snapshot's window, read as of another instant). */
  windowEnd?: string;
  /** How means are computed (statistics.ts): `exact` unless a snapshot made before it pins another. */
  statistics?: Statistics;
};

/** The statement of compareStations. */
export function compareQuery(args: CompareArgs) {
  const buckets = Math.ceil((args.hours * 3600) / args.seconds);
  const interval = sql.fragment`make_interval(secs => ${args.seconds})`;
  // Buckets start on the zone's clock: shifted by its offset's minutes past the hour (at the window's end).
  const shift = args.tz ? offsetMinutesPastHour(args.tz, args.windowEnd ?? args.asOf?.iso) : 0;
  const origin = sql.fragment`'2000-01-03 00:00:00+00'::timestamptz + make_interval(mins => ${shift})`;
  // The buckets end with the one holding now, or the instant the archive is read as of.
  const end = args.windowEnd ?? args.asOf?.iso;
  const now = end ? sql.fragment`${end}::timestamptz` : sql.fragment`now()`;
  const first = sql.fragment`date_bin(${interval}, ${now}, ${origin}) - ${buckets - 1} * ${interval}`;
  // A looser bound than `first` (which is later than it), written as TimescaleDB reads a constant while
  // planning, now() less a literal interval: only the chunks of the window are planned. With `first` alone
  // (bind parameters, date_bin) every chunk of readings was planned and then left out at start, a cost
  // growing with the history.
  const window = sql.fragment`${now} - ${sql.literalValue(`${buckets * args.seconds} seconds`)}::interval`;
  const column = sql.identifier([args.param]);
  const stations = sql.array(args.stationIds, 'text');
  // Each bucket's mean as statistics.ts defines it, from the readings' exact sums or the hourly rollup's:
  // the same bits either way. Snapshots made before exact sums keep avg() over the readings.
  const mean = args.statistics === 'ordered-doubles'
    ? sql.fragment`avg(${column})`
    : sql.fragment`envmon_mean(count(${column}), sum(envmon_decimal(${column})))`;
  const means = args.asOf
    // As of an instant: from the readings as the archive held them then, whatever the rollups say now.
    ? sql.fragment`
        select station_id, date_bin(${interval}, ts, ${origin}) as slot, ${mean} as mean
        from envmon_readings_as_of(${stations}, ${window}, 'infinity', ${args.asOf.iso}::timestamptz)
        where ts >= ${first} ${flagFilter(args.quality)}
        group by 1, 2`
    : args.seconds >= 3600 && shift === 0
      ? sql.fragment`
        select station_id, date_bin(${interval}, bucket, ${origin}) as slot,
               envmon_mean(sum(${sql.identifier([`${args.param}_count`])}), sum(${sql.identifier([`${args.param}_sum`])})) as mean
        from readings_hourly
        where station_id = any(${stations}) and bucket >= ${first} and bucket > ${window} ${flagFilter(args.quality)}
        group by 1, 2`
      : sql.fragment`
        select station_id, date_bin(${interval}, ts, ${origin}) as slot, ${mean} as mean
        from readings
        where station_id = any(${stations}) and ts >= ${first} and ts > ${window} ${flagFilter(args.quality)}
        group by 1, 2`;
  return sql.type(compareRow)`
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
      (select array_agg(${args.tz ? sql.fragment`envmon_local_iso(slot, ${args.tz})` : sql.fragment`to_char(slot at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`} order by i) from slots) as timestamps,
      (select jsonb_object_agg(station_id, values) from series) as series,
      exists (select 1 from rollup_backlog where station_id = any(${sql.array(args.stationIds, 'text')})) as waiting
  `;
}

/** The minutes past the hour of the zone's offset at `at` (now when absent): 30 in India and Newfoundland, 45 in Nepal, else 0. */
const offsetMinutesPastHour = (zone: string, at?: string) => ((offsetMinutes(zone, at ? new Date(at) : undefined) % 60) + 60) % 60;
