import { dateRangeErrors } from '../core/params.js';
import type { PgPool } from '../../db/pgPool.js';
import { parquetBuffer } from '../../formats/parquet.js';
import type { AsOf } from '../core/asOf.js';
import { describeRange, periodAdjective } from '../core/attribution.js';
import { anySource, daysSpan, type Pinned, type SnapshotSource } from '../core/snapshotSource.js';
import { qcConfigOf } from '../core/qc/config.js';
import { columnsOf } from './columns.js';
import { stationInterval } from './outputs.js';
import { aggregateReadings, compareInterval, compareQuery, type AggregateArgs, type CompareArgs, type CompareRow } from './queries.js';
import { aggregateQuerySchema, compareQuerySchema, type AggregateQuery, type CompareQuery } from './schema.js';
import { aggregateCsv, aggregateFieldNames, aggregateParquet } from './shape.js';

/** /data/aggregate/: a station's statistics per period, summed from its readings as of the snapshot's instant. */
export function aggregateSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  const stationOf = (query: AggregateQuery) => query.station ?? defaultStation ?? '';
  const argsOf = (query: AggregateQuery, asOf: AggregateArgs['asOf'], pinned: Pinned): AggregateArgs => ({
    stationId: stationOf(query), period: query.period, from: query.from_date, to: query.to_date, quality: query.quality, metrics: query.metrics, asOf,
    qcPass: query.qc === 'pass' ? pinned.qc?.[stationOf(query)] : undefined,
    tz: query.tz === 'UTC' ? undefined : query.tz, percentiles: query.percentiles, minCoverage: query.min_coverage,
    statistics: pinned.statistics ?? 'ordered-doubles',
  });
  // A zone's dates start up to a day either side of the UTC ones: the span holds both.
  const spanOf = (query: AggregateQuery) => {
    const span = daysSpan(query.from_date, query.to_date);
    const widened = (at: string | null, days: number) => (at === null ? null : new Date(Date.parse(at) + days * 86_400_000).toISOString());
    return query.tz && query.tz !== 'UTC' ? { start: widened(span.start, -1), end: widened(span.end, 1) } : span;
  };
  return anySource<AggregateQuery>({
    path: '/api/v1/data/aggregate/',
    schema: aggregateQuerySchema(defaultStation),
    checks: dateRangeErrors,
    stations: (query) => [stationOf(query)],
    span: spanOf,
    describe: (query) => `${periodAdjective[query.period]} aggregates of readings of station ${stationOf(query)} ${describeRange({ from: query.from_date, to: query.to_date })}`,
    // Coverage counts with the station's interval as it was when the snapshot was made; qc=pass with its
    // quality-control configuration then.
    pin: async (pool, query, asOf) => ({
      statistics: 'exact',
      intervalSeconds: (await stationInterval.rows(pool, [stationOf(query)]))[0]?.interval_seconds ?? 60,
      ...(query.qc === 'pass' ? { qc: { [stationOf(query)]: await qcConfigOf(pool, stationOf(query), asOf.iso) } } : {}),
    }),
    csv: async (pool, query, asOf, pinned) => {
      const { rows, labels } = await aggregateReadings(pool, argsOf(query, asOf, pinned), pinned.intervalSeconds ?? 60);
      const header = ['period_start', 'count', ...aggregateFieldNames(columnsOf(query.metrics, query.percentiles))].join(',') + '\n';
      return { bytes: Buffer.from(aggregateCsv(rows, header, labels)), rows: rows.length };
    },
    parquet: async (pool, query, asOf, pinned, metadata) => {
      const { rows } = await aggregateReadings(pool, argsOf(query, asOf, pinned), pinned.intervalSeconds ?? 60);
      return aggregateParquet(rows, columnsOf(query.metrics, query.percentiles), metadata);
    },
  });
}

/** /data/compare/: one metric of several stations on common buckets, the window ending at the snapshot's instant. */
export function compareSnapshotSource(): SnapshotSource {
  const argsOf = (query: CompareQuery, asOf: AsOf, pinned: Pinned): CompareArgs => ({
    stationIds: [...query.stations].sort(), param: query.param, hours: query.hours, seconds: compareInterval(query.hours), quality: query.quality,
    asOf, windowEnd: pinned.windowEnd, tz: query.tz === 'UTC' ? undefined : query.tz, statistics: pinned.statistics ?? 'ordered-doubles',
  });
  // The compare statement is slonik's, its placeholders named $slonik_n: numbered as the driver takes them
  // to run on the snapshot's pool.
  const compared = async (pool: PgPool, args: CompareArgs) => {
    const statement = compareQuery(args);
    const text = statement.sql.replace(/\$slonik_(\d+)/g, '$$$1');
    return (await pool.read<CompareRow>({ text, values: [...statement.values] as unknown[] })).rows[0]!;
  };
  return anySource<CompareQuery>({
    path: '/api/v1/data/compare/',
    schema: compareQuerySchema,
    stations: (query) => [...query.stations].sort(),
    span: (query, asOf) => ({ start: new Date(asOf.at.getTime() - query.hours * 3_600_000 - 86_400_000).toISOString(), end: null }),
    describe: (query) => `${query.param} of stations ${[...query.stations].sort().join(', ')} in the ${query.hours} hours before the instant cited`,
    pin: async (_pool, _query, asOf) => ({ windowEnd: asOf.iso, statistics: 'exact' }),
    csv: async (pool, query, asOf, pinned) => {
      const args = argsOf(query, asOf, pinned);
      const { timestamps, series } = await compared(pool, args);
      const lines = [`timestamp,${args.stationIds.join(',')}\n`];
      timestamps.forEach((t, i) => lines.push(`${t},${args.stationIds.map((id) => series[id]?.[i] ?? '').join(',')}\n`));
      return { bytes: Buffer.from(lines.join('')), rows: timestamps.length };
    },
    parquet: async (pool, query, asOf, pinned, metadata) => {
      const args = argsOf(query, asOf, pinned);
      const { timestamps, series } = await compared(pool, args);
      return parquetBuffer(
        [{ name: 'timestamp', kind: 'timestamp', required: true }, ...args.stationIds.map((id) => ({ name: id, kind: 'double' } as const))],
        [timestamps.map((t) => BigInt(Date.parse(t)) * 1000n), ...args.stationIds.map((id) => timestamps.map((_, i) => series[id]?.[i] ?? null))],
        metadata,
      );
    },
  });
}
