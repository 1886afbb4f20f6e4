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
  /** The values the flags were computed from, per metric in column order (NaN for none; empty when untested). */
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

/** A reading's flag for a metric with no tests: not evaluated. */
export const untested = qcFlag.notEvaluated;

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
export async function seriesFacts(pool: PgPool, stationId: string, asOf: AsOf | undefined): Promise<SeriesFacts> {
  const values: string[] = [];
  const source = sourceOf(values, stationId, asOf);
  const text = `
    select count(*)::float8, coalesce(trunc(percentile_cont(0.5) within group (order by gap)), 'NaN')::float8
    from (select extract(epoch from r.ts - lag(r.ts) over (order by r.ts))::float8 as gap from ${source}) gaps`;
  const [length, interval] = await readColumns(pool, { text, values }, 2);
  return { length: length![0]!, interval: interval![0]! };
}

/** The columns of a binary COPY of `width` float8 columns, NULL as NaN, built as the rows arrive. */
async function readColumns(pool: PgPool, query: CopyQuery, width: number): Promise<Float64Array[]> {
  const reader = await copyOut(pool, query, 'binary', new CopyBinaryReader(Array(width).fill('float8'), 8_192));
  let columns = Array.from({ length: width }, () => new Float64Array(8_192));
  let rows = 0;
  for await (const batch of reader as AsyncIterable<{ rows: number; columns: (number | null)[][] }>) {
    if (rows + batch.rows > columns[0]!.length) {
      const size = Math.max(columns[0]!.length * 2, rows + batch.rows);
      columns = columns.map((column) => {
        const grown = new Float64Array(size);
        grown.set(column.subarray(0, rows));
        return grown;
      });
    }
    batch.columns.forEach((values, c) => {
      const column = columns[c]!;
      for (let i = 0; i < batch.rows; i++) column[rows + i] = values[i] ?? NaN;
    });
    rows += batch.rows;
  }
  return columns.map((column) => column.slice(0, rows));
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
export async function stationQcFlags(
  pool: PgPool, stationId: string, range: QcRange, config: QcConfig, asOf?: AsOf, facts?: SeriesFacts,
): Promise<StationFlags> {
  const series = facts ?? (await seriesFacts(pool, stationId, asOf));
  const before = lookBack(config, series.interval);
  const values: string[] = [];
  // Only the metrics with tests are read; the others are not evaluated.
  const tested = qcStreams.flatMap((s, index) => (config.streams[s.stream] ? [index] : []));
  const lower = range.from ? `r.ts >= ${lit(values, range.from)}::timestamptz` : range.after ? `r.ts > ${lit(values, range.after)}::timestamptz` : 'true';
  const upper = range.to ? `r.ts < ${lit(values, range.to)}::timestamptz` : 'true';
  const columns = (inRange: number) => ['extract(epoch from r.ts)::float8 * 1000', `${inRange}::float8`, ...tested.map((s) => `r.${qcStreams[s]!.field}::float8`)].join(', ');
  const source = () => sourceOf(values, stationId, asOf);
  const text = `
    select * from (
      (select ${columns(0)} from ${where(source(), `not (${lower})`)} order by r.ts desc limit ${before})
      union all
      (select ${columns(1)} from ${where(source(), `${lower} and ${upper}`)})
      union all
      (select ${columns(0)} from ${where(source(), `not (${upper})`)} order by r.ts limit 1)
    ) series order by 1`;
  const [times, inRange, ...testedValues] = (await readColumns(pool, { text, values }, 2 + tested.length)) as [Float64Array, Float64Array, ...Float64Array[]];
  const first = Math.max(inRange.indexOf(1), 0);
  const last = inRange.lastIndexOf(1) + 1;
  const n = Math.max(last - first, 0);
  const streams = qcStreams.map(({ field, stream }, index): StreamFlags => {
    const at = tested.indexOf(index);
    if (at < 0) return { field, stream, tests: {}, aggregate: new Uint8Array(n).fill(untested) };
    const tests = runTests(config.streams[stream]!.qartod, testedValues[at]!, times, series);
    return {
      field, stream,
      tests: Object.fromEntries(Object.entries(tests).map(([test, f]) => [test, f.slice(first, first + n)])),
      aggregate: aggregateFlags(Object.values(tests), times.length).slice(first, first + n),
    };
  });
  const valuesOf = (index: number) => {
    const at = tested.indexOf(index);
    return at < 0 ? new Float64Array(0) : testedValues[at]!.slice(first, first + n);
  };
  return { times: times.slice(first, first + n), streams, values: qcStreams.map((_, index) => valuesOf(index)) };
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


// Readings per window of a cursor: a download holds one window of each station's flags at a time.
const windowReadings = 32_768;

/**
 * A station's flags along a read of its readings in time order, window by window: each window is read
 * and flagged with its own context (stationQcFlags), so memory holds one window whatever the range, and
 * the flags are the whole series' all the same.
 */
export class StationQcCursor {
  private window: StationFlags | null = null;
  /** Where the next window starts (an instant to the microsecond); null once the last was read. */
  private next: string | null | undefined;
  private facts?: SeriesFacts;

  constructor(
    private readonly pool: PgPool,
    private readonly stationId: string,
    private readonly config: QcConfig,
    private readonly range: QcRange,
    private readonly asOf?: AsOf,
    /** Readings per window. */
    private readonly windowSize = windowReadings,
  ) {}

  /** The aggregate flags at `ms` for the metrics `streams` when the window read holds it; null when another window must be read. */
  flagsNow(ms: number, streams: readonly number[]): number[] | null {
    if (!this.window) return null;
    const index = indexOfTime(this.window.times, ms);
    if (index >= 0) return streams.map((s) => this.window!.streams[s]!.aggregate[index]!);
    const last = this.window.times[this.window.times.length - 1];
    if (this.next !== null && (last === undefined || ms > last)) return null;
    // A reading the flags were not computed for (one that arrived between the two reads of a download).
    return streams.map(() => untested);
  }

  /** Each window of the range in turn. */
  async *windows(): AsyncGenerator<StationFlags> {
    while (this.next !== null) {
      await this.readWindow();
      yield this.window!;
    }
  }

  /** The aggregate flags at `ms` (no earlier than the last asked for), reading the windows up to it. */
  async flagsAt(ms: number, streams: readonly number[]): Promise<number[]> {
    for (;;) {
      const flags = this.flagsNow(ms, streams);
      if (flags) return flags;
      await this.readWindow();
    }
  }

  private async readWindow(): Promise<void> {
    this.facts ??= await seriesFacts(this.pool, this.stationId, this.asOf);
    const start: QcRange = this.next ? { from: this.next } : { from: this.range.from, after: this.range.after };
    const end = await this.windowEnd(start);
    this.window = await stationQcFlags(this.pool, this.stationId, { ...start, to: end ?? this.range.to }, this.config, this.asOf, this.facts);
    this.next = end;
  }

  /** The instant of the first reading after the window starting at `start`, or null when the range ends first. */
  private async windowEnd(start: QcRange): Promise<string | null> {
    const values: string[] = [];
    const lower = start.from ? `r.ts >= ${lit(values, start.from)}::timestamptz` : start.after ? `r.ts > ${lit(values, start.after)}::timestamptz` : 'true';
    const upper = this.range.to ? `r.ts < ${lit(values, this.range.to)}::timestamptz` : 'true';
    const text = `
      select to_char(r.ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at
      from ${where(sourceOf(values, this.stationId, this.asOf), `${lower} and ${upper}`)}
      order by r.ts offset ${this.windowSize} limit 1`;
    const { rows } = await this.pool.read<{ at: string }>({ text, values });
    return rows[0]?.at ?? null;
  }
}
