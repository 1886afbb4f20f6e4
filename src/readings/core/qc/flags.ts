import { float8Array, timestampArray } from '../../../db/binaryArrays.js';
import type { CopyQuery } from '../../../db/copyOut.js';
import { copyRowOf } from '../../../db/copyRow.js';
import type { PgPool } from '../../../db/pool.js';
import type { AsOf } from '../asOf.js';
import { qcStreams, qcTests, type QcConfig, type QcTest, type StreamTests } from './config.js';
import { aggregateFlags, flatLine, grossRange, medianInterval, qcFlag, rateOfChange, spike, timeGap, type SeriesFacts } from './qartod.js';

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
  /** The same to the microsecond, exactly (whole numbers). */
  micros: Float64Array;
  /** With a limit: where the next window starts (to the microsecond), or null when the range ends here. */
  next?: string | null;
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
 * spacing in whole seconds, computed as ioos_qc computes it from the whole series it is given. The
 * timestamps come as one array, in the order of the primary key, rather than row by row.
 */
export async function seriesFacts(pool: PgPool, stationId: string, asOf: AsOf | undefined): Promise<SeriesFacts> {
  const values: string[] = [];
  const text = `select array_agg(ts) from (select r.ts from ${sourceOf(values, stationId, asOf)} order by r.ts) s`;
  const [times] = await readArrays(pool, { text, values }, ['timestamptz']);
  return { length: times!.length, interval: medianInterval(times!.map((us) => us / 1000)) };
}

/**
 * The one row of `query`, each column an array (timestamptz[] as microseconds since 1970, float8[] with
 * NaN for NULL): a window of readings in one message per column rather than a message per reading.
 */
async function readArrays(pool: PgPool, query: CopyQuery, types: readonly ('timestamptz' | 'float8')[]): Promise<Float64Array[]> {
  const row = await copyRowOf(pool, query);
  return types.map((type, c) => {
    const bytes = row?.[c];
    if (!bytes) return new Float64Array(0);
    return type === 'timestamptz' ? timestampArray(bytes) : float8Array(bytes);
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
export async function stationQcFlags(
  pool: PgPool, stationId: string, range: QcRange, config: QcConfig, asOf?: AsOf, facts?: SeriesFacts, limit?: number,
): Promise<StationFlags> {
  const series = facts ?? (await seriesFacts(pool, stationId, asOf));
  return flagSeries(await readSeries(pool, stationId, range, config, series, asOf, limit), config, series);
}

/** The readings of a range with their context, as read for stationQcFlags: each part's columns, the metrics read. */
type SeriesRead = { parts: [Float64Array[], Float64Array[], Float64Array[]]; tested: number[]; limit?: number };

async function readSeries(
  pool: PgPool, stationId: string, range: QcRange, config: QcConfig, series: SeriesFacts, asOf?: AsOf, limit?: number,
): Promise<SeriesRead> {
  const before = lookBack(config, series.interval);
  const values: string[] = [];
  // Only the metrics with tests are read; the others are not evaluated.
  const tested = qcStreams.flatMap((s, index) => (config.streams[s.stream] ? [index] : []));
  const lower = range.from ? `r.ts >= ${lit(values, range.from)}::timestamptz` : range.after ? `r.ts > ${lit(values, range.after)}::timestamptz` : 'true';
  const upper = range.to ? `r.ts < ${lit(values, range.to)}::timestamptz` : 'true';
  const columns = ['r.ts', ...tested.map((s, i) => `r.${qcStreams[s]!.field}::float8 as v${i}`)].join(', ');
  // Each part as arrays, read in the primary key's order: the readings before the range (as many as the
  // flat-line test looks back over), those in it (at most `limit` and one more, which starts the next
  // window), and the first after it.
  const part = (name: string, rows: string) => `(select array_agg(ts) as ${name}_ts${tested.map((_, i) => `, array_agg(v${i}) as ${name}_v${i}`).join('')} from (${rows}) ${name}) ${name}_part`;
  const text = `
    select * from
      ${part('before', `select * from (select ${columns} from ${where(sourceOf(values, stationId, asOf), `not (${lower})`)} order by r.ts desc limit ${before}) b order by ts`)},
      ${part('range', `select ${columns} from ${where(sourceOf(values, stationId, asOf), `${lower} and ${upper}`)} order by r.ts${limit ? ` limit ${limit + 1}` : ''}`)},
      ${part('after', `select ${columns} from ${where(sourceOf(values, stationId, asOf), `not (${upper})`)} order by r.ts limit 1`)}`;
  const width = 1 + tested.length;
  const types = ['timestamptz' as const, ...tested.map(() => 'float8' as const)];
  const arrays = await readArrays(pool, { text, values }, [...types, ...types, ...types]);
  const parts = [0, 1, 2].map((p) => arrays.slice(p * width, (p + 1) * width)) as SeriesRead['parts'];
  return { parts, tested, limit };
}

/** Where the window after `read` starts (to the microsecond), or null when the range ends with it. */
const nextOf = ({ parts: [, range], limit }: SeriesRead) => (limit !== undefined && range[0]!.length > limit ? instantOf(range[0]![limit]!) : null);

/** The flags of the readings read. */
function flagSeries(read: SeriesRead, config: QcConfig, series: SeriesFacts): StationFlags {
  const flagging = flaggingOf(read, config, series);
  return flagging.done(qcStreams.map((_, index) => flagging.stream(index)));
}

/**
 * flagSeries giving the event loop a turn between metrics: the next window's rows arrive meanwhile, so
 * that reading it and flagging this one go side by side.
 */
async function flagSeriesYielding(read: SeriesRead, config: QcConfig, series: SeriesFacts): Promise<StationFlags> {
  const flagging = flaggingOf(read, config, series);
  const streams: StreamFlags[] = [];
  for (let index = 0; index < qcStreams.length; index++) {
    streams.push(flagging.stream(index));
    await new Promise((resolve) => setImmediate(resolve));
  }
  return flagging.done(streams);
}

/** The flags of the readings read, metric by metric, then whole. */
function flaggingOf(read: SeriesRead, config: QcConfig, series: SeriesFacts) {
  const { parts: [beforePart, rangePart, afterPart], tested, limit } = read;
  // Past the limit, the last reading read starts the next window and is this one's reading after.
  const more = limit !== undefined && rangePart[0]!.length > limit;
  const joined = (c: number) => concat([beforePart[c]!, rangePart[c]!, more ? new Float64Array(0) : afterPart[c]!]);
  const micros = joined(0);
  const times = micros.map((us) => us / 1000);
  const first = beforePart[0]!.length;
  const n = rangePart[0]!.length - (more ? 1 : 0);
  const stream = (index: number): StreamFlags => {
    const { field, stream: name } = qcStreams[index]!;
    const at = tested.indexOf(index);
    if (at < 0) return { field, stream: name, tests: {}, aggregate: new Uint8Array(n).fill(untested) };
    const tests = runTests(config.streams[name]!.qartod, joined(at + 1), times, series);
    return {
      field, stream: name,
      tests: Object.fromEntries(Object.entries(tests).map(([test, f]) => [test, f.subarray(first, first + n)])),
      aggregate: aggregateFlags(Object.values(tests), times.length).subarray(first, first + n),
    };
  };
  const valuesOf = (index: number) => {
    const at = tested.indexOf(index);
    return at < 0 ? new Float64Array(0) : rangePart[at + 1]!.subarray(0, n);
  };
  const done = (streams: StreamFlags[]): StationFlags => ({
    times: times.subarray(first, first + n), micros: micros.subarray(first, first + n), streams, values: qcStreams.map((_, index) => valuesOf(index)),
    next: nextOf(read),
  });
  return { stream, done };
}

const concat = (parts: Float64Array[]) => {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/** An instant in microseconds since 1970 as ISO 8601 text to the microsecond, as PostgreSQL reads it. */
const instantOf = (us: number) =>
  `${new Date(Math.floor(us / 1000)).toISOString().slice(0, -1)}${String(((us % 1000) + 1000) % 1000).padStart(3, '0')}Z`;

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


// Readings per window of a cursor: a download holds one window of each of its stations' flags at a time.
const windowReadings = 16_384;
/** Readings per window of a read of one station's range whole (a report, qc=pass): fewer windows, each its context. */
export const largeWindow = 131_072;

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
  private pending: Promise<SeriesRead> | null = null;

  constructor(
    private readonly pool: PgPool,
    private readonly stationId: string,
    private readonly config: QcConfig,
    private readonly range: QcRange,
    private readonly asOf?: AsOf,
    private readonly options: CursorOptions = {},
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
    const start: QcRange = this.next ? { from: this.next } : { from: this.range.from, after: this.range.after };
    const { facts, read } = this.facts ? { facts: this.facts, read: await (this.pending ?? this.read(start, this.facts)) } : await this.firstRead(start);
    this.facts = facts;
    this.next = nextOf(read);
    if (!this.options.readAhead) {
      this.window = flagSeries(read, this.config, facts);
      return;
    }
    // The next window is read while this one is flagged: the database and the service work side by side.
    this.pending = this.next ? this.read({ from: this.next }, facts) : null;
    this.pending?.catch(() => undefined);
    this.window = await flagSeriesYielding(read, this.config, facts);
  }

  /**
   * The series' facts and the first window. Reading ahead, both at once: the window's context is read for
   * the interval expected, and read again should the series' median spacing ask for a longer one.
   */
  private async firstRead(start: QcRange): Promise<{ facts: SeriesFacts; read: SeriesRead }> {
    const expected = this.options.readAhead?.interval;
    if (!expected) {
      const facts = await seriesFacts(this.pool, this.stationId, this.asOf);
      return { facts, read: await this.read(start, facts) };
    }
    const guess = this.read(start, { length: Infinity, interval: expected });
    guess.catch(() => undefined);
    const facts = await seriesFacts(this.pool, this.stationId, this.asOf);
    const enough = lookBack(this.config, facts.interval) <= lookBack(this.config, expected);
    return { facts, read: enough ? await guess : await this.read(start, facts) };
  }

  private read(start: QcRange, facts: SeriesFacts): Promise<SeriesRead> {
    return readSeries(this.pool, this.stationId, { ...start, to: this.range.to }, this.config, facts, this.asOf, this.options.windowSize ?? windowReadings);
  }
}

/**
 * How a cursor reads: readings per window; and, for a read of one station's range whole (a report,
 * qc=pass), reading ahead, a connection more: the first window beside the series' facts, for the
 * station's interval, and each next window while one is flagged.
 */
export type CursorOptions = { windowSize?: number; readAhead?: { interval: number } };
