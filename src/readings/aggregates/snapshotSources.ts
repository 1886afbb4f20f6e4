import { dateRangeErrors } from '../core/params.js';
import { anySource, type SnapshotSource } from '../core/snapshotSource.js';
import { columnsOf } from './columns.js';
import { stationInterval } from './outputs.js';
import { aggregateReadings, type AggregateArgs } from './queries.js';
import { aggregateQuerySchema, type AggregateQuery } from './schema.js';
import { aggregateCsv, aggregateFieldNames, aggregateParquet } from './shape.js';

const periodAdjective = { hour: 'hourly', day: 'daily', week: 'weekly', month: 'monthly' } as const;
const describeRange = (from?: string, to?: string) =>
  from && to ? `from ${from} to ${to}` : from ? `from ${from} onwards` : to ? `up to ${to}` : 'full history';

/** /data/aggregate/: a station's statistics per period, summed from its readings as of the snapshot's instant. */
export function aggregateSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  const stationOf = (query: AggregateQuery) => query.station ?? defaultStation ?? '';
  const argsOf = (query: AggregateQuery, asOf: AggregateArgs['asOf']): AggregateArgs => ({
    stationId: stationOf(query), period: query.period, from: query.from_date, to: query.to_date, quality: query.quality, metrics: query.metrics, asOf,
  });
  return anySource<AggregateQuery>({
    path: '/api/v1/data/aggregate/',
    schema: aggregateQuerySchema(defaultStation),
    checks: dateRangeErrors,
    stations: (query) => [stationOf(query)],
    span: (query) => ({
      start: query.from_date ? `${query.from_date}T00:00:00.000Z` : null,
      end: query.to_date ? new Date(Date.parse(`${query.to_date}T00:00:00Z`) + 86_400_000).toISOString() : null,
    }),
    describe: (query) => `${periodAdjective[query.period]} aggregates of readings of station ${stationOf(query)} ${describeRange(query.from_date, query.to_date)}`,
    // Coverage counts with the station's interval as it was when the snapshot was made.
    pin: async (pool, query) => ({ intervalSeconds: (await stationInterval.rows(pool, [stationOf(query)]))[0]?.interval_seconds ?? 60 }),
    csv: async (pool, query, asOf, pinned) => {
      const { rows } = await aggregateReadings(pool, argsOf(query, asOf), pinned.intervalSeconds ?? 60);
      const header = ['period_start', 'count', ...aggregateFieldNames(columnsOf(query.metrics))].join(',') + '\n';
      return { bytes: Buffer.from(aggregateCsv(rows, header)), rows: rows.length };
    },
    parquet: async (pool, query, asOf, pinned, metadata) => {
      const { rows } = await aggregateReadings(pool, argsOf(query, asOf), pinned.intervalSeconds ?? 60);
      return aggregateParquet(rows, columnsOf(query.metrics), metadata);
    },
  });
}
