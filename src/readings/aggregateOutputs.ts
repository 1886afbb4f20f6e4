import type { PgPool } from '../db/pool.js';
import { parquetType } from '../http/parquetFile.js';
import { SharedBytes } from '../http/splicedGzip.js';
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
  make: async (pool, intervalSeconds, { before, kept, readings }) => {
    const split = before === -Infinity ? '-infinity' : new Date(before).toISOString();
    const { settled, later } = await aggregateJsonPeriods(pool, args, intervalSeconds, kept ? split : '-infinity', split, readings);
    const first = kept ?? { before, periods: settled.periods, bytes: new SharedBytes(settled.results) };
    const periods = first.periods + later.periods;
    const head = `{"station":${JSON.stringify(args.stationId)},"period":${JSON.stringify(args.period)},"count":${periods},"results":[`;
    const both = first.bytes.bytes.length > 0 && later.results.length > 0;
    return {
      // As bytes: a year of hourly periods is 3.7 MB, and never a string in the service. The settled
      // part is the same in every answer made from it, and its gzip is made once.
      body: [Buffer.from(head), first.bytes, Buffer.concat([both ? comma : empty, later.results, closing])],
      periods,
      settled: first,
    };
  },
});
const comma = Buffer.from(',');
const empty = Buffer.alloc(0);
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
