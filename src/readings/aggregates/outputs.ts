import type { Db, PgPool } from '../../db/pool.js';
import { prepared } from '../../db/prepared.js';
import { EncodedAnswer } from '../../http/encodedAnswer.js';
import { parquetType } from '../../formats/parquet.js';
import { SharedBytes } from '../../http/answerParts.js';
import type { AggregateAnswer, AggregateOutput, SettledPart } from './cache.js';
import { columnsOf } from './columns.js';
import { asOfPools, readAsOfOn, type AsOf } from '../core/asOf.js';
import { parquetMetadata, preamble } from '../core/attribution.js';
import { aggregateJsonPeriods, aggregateReadings, type AggregateArgs, type AggregateRow, type JsonPeriods } from './queries.js';
import { aggregateCsv, aggregateFieldNames, aggregateParquet } from './shape.js';

/**
 * The JSON answer of an aggregate: {station, period, count, results}, its results written by the
 * database. Made again from a kept part, it computes only the periods after that part, and gives back
 * that part extended to `before`; made whole, it gives back its periods before `before` to keep.
 */
export const aggregateJsonOutput = (args: AggregateArgs): AggregateOutput => ({
  name: 'json',
  type: 'application/json; charset=utf-8',
  make: async (pool, intervalSeconds, { before, kept }) => {
    const iso = (at: number) => (at === -Infinity ? '-infinity' : at === Infinity ? 'infinity' : new Date(at).toISOString());
    const { settled, later, seen } = await aggregateJsonPeriods(pool, args, intervalSeconds, iso(kept?.before ?? -Infinity), iso(before));
    const first = extend(kept, settled, before);
    const periods = first.periods + later.periods;
    const zone = args.tz ? `,"tz":${JSON.stringify(args.tz)}` : '';
    const head = `{"station":${JSON.stringify(args.stationId)},"period":${JSON.stringify(args.period)}${zone},"count":${periods},"results":[`;
    const both = first.bytes.bytes.length > 0 && later.results.length > 0;
    return {
      // As bytes: a year of hourly periods is 3.7 MB, and never a string in the service. The settled
      // part is the same in every answer made from it: its gzip and its hash are made once, and the
      // three parts are not joined for a client that takes gzip.
      body: [Buffer.from(head), first.bytes, Buffer.concat([both ? comma : empty, later.results, closing])],
      periods,
      settled: first,
      seen,
    };
  },
});

/**
 * A kept part followed by the settled periods made after it, up to `before`: the kept part itself (its
 * compressed form with it) when none were, or none was kept.
 */
function extend(kept: SettledPart | undefined, settled: JsonPeriods, before: number): SettledPart {
  if (!kept) return { before, periods: settled.periods, bytes: new SharedBytes(settled.results) };
  if (settled.periods === 0) return { ...kept, before };
  const joined = kept.bytes.bytes.length > 0 ? Buffer.concat([kept.bytes.bytes, comma, settled.results]) : settled.results;
  return { before, periods: kept.periods + settled.periods, bytes: new SharedBytes(joined) };
}
const comma = Buffer.from(',');
const empty = Buffer.alloc(0);
const closing = Buffer.from(']}');

/** An answer made from the aggregate's rows, whole. */
const fromRows = (args: AggregateArgs, make: (rows: AggregateRow[], labels?: string[]) => string | Buffer) => async (pool: PgPool, intervalSeconds: number) => {
  const { rows, seen, labels } = await aggregateReadings(pool, args, intervalSeconds);
  return { body: make(rows, labels), periods: rows.length, seen };
};

/** The CSV answer of an aggregate, opened by the licence and `cite` as `# ` lines, then its header row. */
export const aggregateCsvOutput = (args: AggregateArgs, cite: string): AggregateOutput => ({
  name: 'csv',
  type: 'text/csv; charset=utf-8',
  make: fromRows(args, (rows, labels) => aggregateCsv(rows, preamble(cite, ['period_start', 'count', ...aggregateFieldNames(columnsOf(args.metrics, args.percentiles))], args.tz), labels)),
});

/** The Parquet answer of an aggregate, with the licence and `cite` in its key-value metadata. */
export const aggregateParquetOutput = (args: AggregateArgs, cite: string, asOf?: AsOf): AggregateOutput => ({
  name: 'parquet',
  type: parquetType,
  make: fromRows(args, (rows) => aggregateParquet(rows, columnsOf(args.metrics, args.percentiles), parquetMetadata(cite, asOf, args.tz))),
});

/** A station's reporting interval, which coverage counts with. */
export const stationInterval = prepared<{ interval_seconds: number }>('envmon_station_interval', 'select interval_seconds from stations where station_id = $1');

/**
 * An aggregate as of an instant (args.asOf), made whole each time: summed from the readings as the archive
 * held them then, not from the rollups, and never kept (the instants asked for are any). `intervalSeconds`
 * fixes the station's reporting interval its coverage counts with (a snapshot's); the station's interval
 * as it stands otherwise.
 */
export async function aggregateAsOf(db: Db, args: AggregateArgs, output: AggregateOutput, intervalSeconds?: number): Promise<AggregateAnswer> {
  const pools = await asOfPools(db, args.asOf, [args.stationId]);
  return readAsOfOn(db, pools, async ({ readPool }) => {
    const interval = intervalSeconds ?? (await stationInterval.rows(readPool, [args.stationId]))[0]?.interval_seconds ?? 60;
    const made = await output.make(readPool, interval, { before: Infinity });
    return { answer: new EncodedAnswer(typeof made.body === 'string' ? Buffer.from(made.body) : made.body, output.type), periods: made.periods, exactAt: new Date() };
  });
}
