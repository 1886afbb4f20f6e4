import { parquetBuffer, type ParquetColumn } from '../../formats/parquet.js';
import { z } from '../../http/zod.js';
import { defaultAggregateColumns, metricStats, type AggregateColumn, type MetricStat } from './columns.js';
import { rollupMetrics } from '../reading.js';
import type { AggregateRow } from './queries.js';

const nullableNumber = z.number().nullable();
const statDescriptions: Record<MetricStat, string> = {
  count: 'values of the metric in the bucket (readings without it are not counted)',
  mean: 'mean', min: 'minimum', max: 'maximum',
  sd: 'sample standard deviation (null below two values)',
};

export const aggregateResultSchema = z
  .object({
    period_start: z.string().datetime({ offset: true }).openapi({ description: 'The bucket\'s first instant: UTC (Z), or with `tz` in that zone with its offset then' }),
    count: z.number().int().openapi({ description: 'Readings in the bucket after the quality filter' }),
    // Without `metrics`: the default fields, and the standard deviation of each metric they give a mean of.
    // With it: each metric asked for with its five statistics.
    ...Object.fromEntries(rollupMetrics.flatMap((m) => metricStats.map((stat) => [`${m}_${stat}`, nullableNumber.optional().openapi({
      description: `${m}: ${statDescriptions[stat]}; given when \`metrics\` names ${m}${defaultAggregateColumns.some((c) => c.name === `${m}_${stat}`) ? ', and without `metrics`' : ''}`,
    })]))),
    expected: z.number().int().openapi({
      description: 'Readings the station\'s reporting interval (interval_seconds) implies for the part of the bucket inside the requested range: its seconds there divided by the interval, rounded up',
    }),
    coverage_pct: nullableNumber.openapi({ description: 'count as a percentage of expected, one decimal; above 100 when the station sends more often than its interval' }),
  })
  // With `percentiles`: `<metric>_pNN` (temperature_c_p05) for each metric the result gives statistics of.
  .catchall(nullableNumber.openapi({ description: 'With `percentiles`: `<metric>_pNN`, the metric\'s NNth percentile over the bucket\'s readings (percentile_cont); null without values or below `min_coverage`' }))
  .openapi('AggregateResult');

/** An aggregate's field names after period_start and count, in order: the columns, then expected and coverage_pct. */
export const aggregateFieldNames = (columns: readonly AggregateColumn[]) => [...columns.map((c) => c.name), 'expected', 'coverage_pct'];

/**
 * The aggregate rows as CSV text: the preamble (ending in the header row), then one line per period; nulls
 * are empty fields. Each period_start is its label where given (a local aggregate's), else its UTC instant.
 */
export function aggregateCsv(rows: readonly AggregateRow[], preamble: string, labels?: readonly string[]): string {
  const lines: string[] = [];
  rows.forEach(([start, ...values], i) => lines.push(`${labels?.[i] ?? new Date(start).toISOString()},${values.map((v) => v ?? '').join(',')}\n`));
  return preamble + lines.join('');
}

/** The columns of an aggregate as Parquet: those of the CSV, typed; counts and `expected` are integers. */
export const aggregateParquetColumns = (columns: readonly AggregateColumn[]): ParquetColumn[] => [
  { name: 'period_start', kind: 'timestamp', required: true },
  { name: 'count', kind: 'int64', required: true },
  ...columns.map((c): ParquetColumn => ({ name: c.name, kind: c.stat === 'count' ? 'int64' : 'double' })),
  { name: 'expected', kind: 'int64', required: true },
  { name: 'coverage_pct', kind: 'double' },
];

/** The aggregate rows as a Parquet file, with `metadata` (licence, citation) in its key-value metadata. */
export function aggregateParquet(rows: readonly AggregateRow[], columns: readonly AggregateColumn[], metadata: Record<string, string>): Buffer {
  const kinds = aggregateParquetColumns(columns);
  const values: (bigint | number | null)[][] = kinds.map(() => []);
  for (const [start, ...fields] of rows) {
    values[0]!.push(BigInt(start) * 1000n);
    for (let k = 0; k < fields.length; k++) {
      const value = fields[k] ?? null;
      values[k + 1]!.push(value !== null && kinds[k + 1]!.kind === 'int64' ? BigInt(value) : value);
    }
  }
  return parquetBuffer(kinds, values, metadata);
}
