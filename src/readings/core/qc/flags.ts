import { CopyBinaryReader } from '../../../db/copyBinary.js';
import { copyOut, type CopyQuery } from '../../../db/copyOut.js';
import type { PgPool } from '../../../db/pool.js';
import type { AsOf } from '../asOf.js';
import { qcStreams, qcTests, type QcConfig, type QcTest, type StreamTests } from './config.js';
import { aggregateFlags, flatLine, grossRange, qcFlag, rateOfChange, spike, timeGap, type SeriesFacts } from './qartod.js';

/** A range of readings' timestamps (ISO instants): from `from` (or after `after`) up to `to`, exclusive. */
export type QcRange = { from?: string; after?: string; to?: string };

/** One metric's flags over a station's readings in a range: each test's, and their aggregate. */
export type StreamFlags = {
  field: string;
  stream: string;
  tests: Partial<Record<QcTest, Uint8Array>>;
  aggregate: Uint8Array;
};

/** The QARTOD flags of a station's readings in a range, in time order. */
export type StationFlags = {
  /** The readings' instants, in milliseconds since 1970. */
  times: Float64Array;
  /** Per metric of a reading, in column order: flags for each reading (not evaluated where it has no tests). */
  streams: StreamFlags[];
  /** The values the flags were computed from, per metric in column order (NaN for none). */
  values: Float64Array[];
};

/**
 * The index of the reading at `ms` in `times` (ascending), or -1: the reading of that millisecond, since
 * a CSV gives instants to the millisecond.
 */
export function indexOfTime(times: Float64Array, ms: number): number {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (times[middle]! < ms - 1e-6) low = middle + 1;
    else high = middle;
  }
  return low < times.length && times[low]! < ms + 1 ? low : -1;
}

const lit = (values: string[], value: string) => `$${values.push(value)}`;

/** Where the station's readings come from: the table, or the archive as it stood at `asOf`. */
const sourceOf = (values: string[], stationId: string, asOf: AsOf | undefined) => asOf
  ? `envmon_readings_as_of(array[${lit(values, stationId)}]::text[], '-infinity', 'infinity', ${lit(values, asOf.iso)}::timestamptz) r`
  : `readings r where r.station_id = ${lit(values, stationId)}`;

const where = (source: string, condition: string) => `${source}${source.includes(' where ') ? ' and' : ' where'} ${condition}`;

/**
 * The facts of the station's whole series the flat-line test takes: how many readings, and their median
 * spacing in whole seconds (as ioos_qc computes it from the whole series it is given).
 */
async function seriesFacts(pool: PgPool, stationId: string, asOf: AsOf | undefined): Promise<SeriesFacts> {
  const values: string[] = [];
  const source = sourceOf(values, stationId, asOf);
  const text = `
    select count(*)::float8, coalesce(trunc(percentile_cont(0.5) within group (order by gap)), 'NaN')::float8
    from (select extract(epoch from r.ts - lag(r.ts) over (order by r.ts))::float8 as gap from ${source}) gaps`;
  const [length, interval] = await readColumns(pool, { text, values }, 2);
  return { length: length![0]!, interval: interval![0]! };
}

/** The columns of a binary COPY of `width` float8 columns, NULL as NaN. */
async function readColumns(pool: PgPool, query: CopyQuery, width: number): Promise<Float64Array[]> {
  const reader = await copyOut(pool, query, 'binary', new CopyBinaryReader(Array(width).fill('float8'), 65_536));
  const batches: (number | null)[][][] = [];
  let rows = 0;
  for await (const batch of reader as AsyncIterable<{ rows: number; columns: (number | null)[][] }>) {
    batches.push(batch.columns);
    rows += batch.rows;
  }
  return Array.from({ length: width }, (_, c) => {
    const column = new Float64Array(rows);
    let at = 0;
    for (const batch of batches) for (const value of batch[c]!) column[at++] = value ?? NaN;
    return column;
  });
}

/** How many readings the flat-line test looks back over, at most, for this configuration and spacing. */
function lookBack(config: QcConfig, interval: number): number {
  let most = 1;
  for (const { qartod } of Object.values(config.streams)) {
    const flat = qartod.flat_line_test;
    if (!flat || !(interval > 0)) continue;
    most = Math.max(most, ...[flat.suspect_threshold, flat.fail_threshold].map((t) => Math.trunc(Math.trunc(t) / interval)));
  }
  return most;
}

/**
 * The QARTOD flags of `stationId`'s readings in `range` under `config`. Each test looks at the station's
 * whole series in time order, as ioos_qc does at the series it is given: a reading's neighbours are the
 * readings before and after it whenever they arrived, and the first and last readings are the series'.
 * So the readings are read with as many before the range as the flat-line test looks back over and one
 * after it, and the tests run over them: a backfill or a deletion changes the flags of exactly the
 * readings whose neighbourhood it changes, whatever the order readings arrived in. With `asOf`, the
 * series as the archive held it then.
 */
export async function stationQcFlags(pool: PgPool, stationId: string, range: QcRange, config: QcConfig, asOf?: AsOf): Promise<StationFlags> {
  const facts = await seriesFacts(pool, stationId, asOf);
  const before = lookBack(config, facts.interval);
  const values: string[] = [];
  const columns = ['extract(epoch from r.ts)::float8 * 1000', ...qcStreams.map((s) => `r.${s.field}::float8`)].join(', ');
  const lower = range.from ? `r.ts >= ${lit(values, range.from)}::timestamptz` : range.after ? `r.ts > ${lit(values, range.after)}::timestamptz` : 'true';
  const upper = range.to ? `r.ts < ${lit(values, range.to)}::timestamptz` : 'true';
  const source = (v: string[]) => sourceOf(v, stationId, asOf);
  const text = `
    select * from (
      (select ${columns} from ${where(source(values), `not (${lower})`)} order by r.ts desc limit ${before})
      union all
      (select ${columns} from ${where(source(values), `${lower} and ${upper}`)})
      union all
      (select ${columns} from ${where(source(values), `not (${upper})`)} order by r.ts limit 1)
    ) series order by 1`;
  const [times, ...seriesValues] = (await readColumns(pool, { text, values }, 1 + qcStreams.length)) as [Float64Array, ...Float64Array[]];
  const first = range.from || range.after ? firstInRange(times, range) : 0;
  const end = range.to ? first + times.subarray(first).findIndex((t) => t >= Date.parse(range.to!)) : -1;
  const last = end < first ? times.length : end;
  const streams = qcStreams.map(({ field, stream }, s) => {
    const tests = runTests(config.streams[stream]?.qartod ?? {}, seriesValues[s]!, times, facts);
    const flags = Object.values(tests);
    return {
      field, stream,
      tests: Object.fromEntries(Object.entries(tests).map(([test, f]) => [test, f.slice(first, last)])),
      aggregate: aggregateFlags(flags, times.length).slice(first, last),
    };
  });
  return { times: times.slice(first, last), streams, values: seriesValues.map((v) => v.slice(first, last)) };
}

function firstInRange(times: Float64Array, range: QcRange): number {
  const from = range.from ? Date.parse(range.from) : Date.parse(range.after!);
  const index = times.findIndex((t) => (range.from ? t >= from : t > from));
  return index < 0 ? times.length : index;
}

/** Each configured test's flags over one metric's series, in qcTests' order. */
export function runTests(tests: StreamTests, values: Float64Array, times: Float64Array, facts?: SeriesFacts): Partial<Record<QcTest, Uint8Array>> {
  const out: Partial<Record<QcTest, Uint8Array>> = {};
  for (const test of qcTests) {
    if (test === 'gross_range_test' && tests.gross_range_test) out[test] = grossRange(values, tests.gross_range_test);
    if (test === 'spike_test' && tests.spike_test) out[test] = spike(values, tests.spike_test);
    if (test === 'rate_of_change_test' && tests.rate_of_change_test) out[test] = rateOfChange(values, times, tests.rate_of_change_test);
    if (test === 'flat_line_test' && tests.flat_line_test) out[test] = flatLine(values, times, tests.flat_line_test, facts);
    if (test === 'time_gap_test' && tests.time_gap_test) out[test] = timeGap(times, tests.time_gap_test);
  }
  return out;
}

/** A reading's flag for a metric with no tests: not evaluated. */
export const untested = qcFlag.notEvaluated;
