import type { PgPool } from '../db/pool.js';
import { parquetType } from '../http/parquetFile.js';
import type { AggregateOutput } from './aggregateCache.js';
import { columnsOf } from './aggregateColumns.js';
import { parquetMetadata, preamble } from './attribution.js';
import { aggregateJsonPeriods, aggregateReadings, type AggregateArgs, type AggregateRow } from './queries.js';
import { aggregateCsv, aggregateFieldNames, aggregateParquet } from './shape.js';

/**
 * The JSON answer of an aggregate: {station, period, count, results}, its results written by the
 * database. Made again from a kept part, it computes only the periods after that part; made whole, it
 * gives back its periods before `before` to keep.
 */
export const aggregateJsonOutput = (args: AggregateArgs): AggregateOutput => ({
  name: 'json',
  type: 'application/json; charset=utf-8',
  make: async (pool, intervalSeconds, { before, kept }) => {
    const split = before === -Infinity ? '-infinity' : new Date(before).toISOString();
    const { settled, later } = await aggregateJsonPeriods(pool, args, intervalSeconds, kept ? split : '-infinity', split);
    const first = kept ? { periods: kept.periods, results: kept.bytes } : settled;
    const periods = first.periods + later.periods;
    const results = [first.results, later.results].filter((part) => part.length > 0);
    const head = `{"station":${JSON.stringify(args.stationId)},"period":${JSON.stringify(args.period)},"count":${periods},"results":[`;
    return {
      // Joined as bytes: a year of hourly periods is 3.7 MB, and never a string in the service.
      body: Buffer.concat([Buffer.from(head), ...results.flatMap((part, i) => (i > 0 ? [comma, part] : [part])), closing]),
      periods,
      settled: { before, periods: first.periods, bytes: first.results },
    };
  },
});
const comma = Buffer.from(',');
const closing = Buffer.from(']}');

/** An answer made from the aggregate's rows, whole. */
const fromRows = (args: AggregateArgs, make: (rows: AggregateRow[]) => string | Buffer) => async (pool: PgPool, intervalSeconds: number) => {
  const rows = await aggregateReadings(pool, args, intervalSeconds);
  return { body: make(rows), periods: rows.length };
};

/** The CSV answer of an aggregate, opened by the licence and `cite` as `# ` lines, then its header row. */
export const aggregateCsvOutput = (args: AggregateArgs, cite: string): AggregateOutput => ({
  name: 'csv',
  type: 'text/csv; charset=utf-8',
  make: fromRows(args, (rows) => aggregateCsv(rows, preamble(cite, ['period_start', 'count', ...aggregateFieldNames(columnsOf(args.metrics))]))),
});

/** The Parquet answer of an aggregate, with the licence and `cite` in its key-value metadata. */
export const aggregateParquetOutput = (args: AggregateArgs, cite: string): AggregateOutput => ({
  name: 'parquet',
  type: parquetType,
  make: fromRows(args, (rows) => aggregateParquet(rows, columnsOf(args.metrics), parquetMetadata(cite))),
});
