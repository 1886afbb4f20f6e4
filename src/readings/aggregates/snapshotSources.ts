import { dateRangeErrors } from '../core/params.js';
import type { PgPool } from '../../db/pgPool.js';
import { pgQueryOf } from '../../db/slonikStatement.js';
import { parquetBuffer } from '../../formats/parquet.js';
import type { AsOf } from '../core/asOf.js';
import { anySource, daysSpan, type Pinned, type SnapshotSource } from '../core/snapshotSource.js';
import { qcConfigOf } from '../core/qc/config.js';
import { columnsOf } from './columns.js';
import { stationInterval } from './outputs.js';
import { aggregateReadings, compareQuery, type CompareArgs, type CompareRow } from './queries.js';
import { aggregateRequest, compareRequest } from './requests.js';
import { aggregateQuerySchema, compareQuerySchema, type AggregateQuery, type CompareQuery } from './schema.js';
import { aggregateCsv, aggregateFieldNames, aggregateParquet } from './shape.js';
import type { Statistics } from './statistics.js';

/** How a snapshot's means and spreads are computed: as its pins say, doubles in timestamp order for those made before exact sums. */
const statisticsOf = (pinned: Pinned): Statistics => pinned.statistics ?? 'ordered-doubles';

/** /data/aggregate/: a station's statistics per period, summed from its readings as of the snapshot's instant. */
export function aggregateSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  const requestOf = (query: AggregateQuery) => aggregateRequest(query, query.station ?? defaultStation ?? '');
  // qc=pass with the station's quality-control configuration as it was when the snapshot was made.
  const qcPassOf = (query: AggregateQuery, pinned: Pinned) => (query.qc === 'pass' ? pinned.qc?.[requestOf(query).stationId] : undefined);
  // A zone's dates start up to a day either side of the UTC ones: the span holds both.
  const spanOf = (query: AggregateQuery) => {
    const span = daysSpan(query.from_date, query.to_date);
    const widened = (at: string | null, days: number) => (at === null ? null : new Date(Date.parse(at) + days * 86_400_000).toISOString());
    return requestOf(query).tz ? { start: widened(span.start, -1), end: widened(span.end, 1) } : span;
  };
  const rowsOf = (pool: PgPool, query: AggregateQuery, asOf: AsOf, pinned: Pinned) =>
    aggregateReadings(pool, { ...requestOf(query).args(asOf, qcPassOf(query, pinned)), statistics: statisticsOf(pinned) }, pinned.intervalSeconds ?? 60);
  return anySource<AggregateQuery>({
    path: '/api/v1/data/aggregate/',
    schema: aggregateQuerySchema(defaultStation),
    checks: dateRangeErrors,
    stations: (query) => [requestOf(query).stationId],
    span: spanOf,
    describe: (query, asOf) => requestOf(query).describe(asOf.iso),
    facts: (query, asOf) => requestOf(query).facts(asOf.iso),
    // Coverage counts with the station's interval as it was when the snapshot was made; qc=pass with its
    // quality-control configuration then.
    pin: async (pool, query, asOf) => {
      const { stationId } = requestOf(query);
      return {
        statistics: 'exact',
        intervalSeconds: (await stationInterval.rows(pool, [stationId]))[0]?.interval_seconds ?? 60,
        ...(query.qc === 'pass' ? { qc: { [stationId]: await qcConfigOf(pool, stationId, asOf.iso) } } : {}),
      };
    },
    csv: async (pool, query, asOf, pinned) => {
      const { rows, labels } = await rowsOf(pool, query, asOf, pinned);
      const header = ['period_start', 'count', ...aggregateFieldNames(columnsOf(query.metrics, query.percentiles))].join(',') + '\n';
      return { bytes: Buffer.from(aggregateCsv(rows, header, labels)), rows: rows.length };
    },
    parquet: async (pool, query, asOf, pinned, metadata) => {
      const { rows } = await rowsOf(pool, query, asOf, pinned);
      return aggregateParquet(rows, columnsOf(query.metrics, query.percentiles), metadata);
    },
  });
}

/** /data/compare/: one metric of several stations on common buckets, the window ending at the snapshot's instant. */
export function compareSnapshotSource(): SnapshotSource {
  // The statement the route runs through slonik, run on the snapshot's pool.
  const compared = async (pool: PgPool, args: CompareArgs) => (await pool.read<CompareRow>(pgQueryOf(compareQuery(args)))).rows[0]!;
  const windowEndOf = (asOf: AsOf, pinned: Pinned) => pinned.windowEnd ?? asOf.iso;
  return anySource<CompareQuery>({
    path: '/api/v1/data/compare/',
    schema: compareQuerySchema,
    stations: (query) => compareRequest(query).stationIds,
    span: (query, asOf) => ({ start: new Date(asOf.at.getTime() - query.hours * 3_600_000 - 86_400_000).toISOString(), end: null }),
    describe: (query) => compareRequest(query).describe(),
    facts: (query, asOf, pinned) => compareRequest(query).facts(windowEndOf(asOf, pinned)),
    pin: async (_pool, _query, asOf) => ({ windowEnd: asOf.iso, statistics: 'exact' }),
    csv: async (pool, query, asOf, pinned) => {
      const args = { ...compareRequest(query).args(asOf, pinned.windowEnd), statistics: statisticsOf(pinned) };
      const { timestamps, series } = await compared(pool, args);
      const lines = [`timestamp,${args.stationIds.join(',')}\n`];
      timestamps.forEach((t, i) => lines.push(`${t},${args.stationIds.map((id) => series[id]?.[i] ?? '').join(',')}\n`));
      return { bytes: Buffer.from(lines.join('')), rows: timestamps.length };
    },
    parquet: async (pool, query, asOf, pinned, metadata) => {
      const args = { ...compareRequest(query).args(asOf, pinned.windowEnd), statistics: statisticsOf(pinned) };
      const { timestamps, series } = await compared(pool, args);
      return parquetBuffer(
        [{ name: 'timestamp', kind: 'timestamp', required: true }, ...args.stationIds.map((id) => ({ name: id, kind: 'double' } as const))],
        [timestamps.map((t) => BigInt(Date.parse(t)) * 1000n), ...args.stationIds.map((id) => timestamps.map((_, i) => series[id]?.[i] ?? null))],
        metadata,
      );
    },
  });
}
