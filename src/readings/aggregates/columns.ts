import { rollupMetrics, type RollupMetric } from '../reading.js';
import { percentileName } from '../core/params.js';
import { meanSql, sdSql, type Statistics } from './statistics.js';

/** What an aggregate gives of a metric per bucket: values counted, mean, min, max, sample standard deviation. */
export const metricStats = ['count', 'mean', 'min', 'max', 'sd'] as const;
export type MetricStat = (typeof metricStats)[number];

/**
 * One column of an aggregate beside period_start and count, named `<metric>_<stat>`, or `<metric>_pNN`
 * for a percentile.
 */
export type AggregateColumn = { metric: RollupMetric; stat: MetricStat; name: string } | { metric: RollupMetric; stat: 'percentile'; percentile: number; name: string };

const column = (metric: RollupMetric, stat: MetricStat): AggregateColumn => ({ metric, stat, name: `${metric}_${stat}` });

/**
 * The columns of an aggregate without `metrics`: the contract's default fields in their order, then the standard deviation
 * of each metric it gives a mean of.
 */
export const defaultAggregateColumns: readonly AggregateColumn[] = [
  column('temperature_c', 'mean'), column('temperature_c', 'min'), column('temperature_c', 'max'),
  column('humidity_rh', 'mean'), column('pressure_hpa', 'mean'), column('pm2_5', 'mean'),
  column('temperature_c', 'sd'), column('humidity_rh', 'sd'), column('pressure_hpa', 'sd'), column('pm2_5', 'sd'),
];

/**
 * The columns of an aggregate: without `metrics` the default ones, with it each metric's five statistics
 * in the order of rollupMetrics; then, with `percentiles`, each percentile of each of those metrics.
 */
export function columnsOf(metrics: readonly RollupMetric[] | undefined, percentiles: readonly number[] = []): readonly AggregateColumn[] {
  const stats = metrics ? rollupMetrics.filter((m) => metrics.includes(m)).flatMap((m) => metricStats.map((stat) => column(m, stat))) : defaultAggregateColumns;
  if (percentiles.length === 0) return stats;
  const named = rollupMetrics.filter((m) => stats.some((c) => c.metric === m));
  return [...stats, ...named.flatMap((metric) => percentiles.map((percentile) => ({ metric, stat: 'percentile' as const, percentile, name: percentileName(metric, percentile) })))];
}

/** A short, stable name for a set of columns (prepared statements and cache keys): the default, or the metrics as bits. */
export function columnsKey(metrics: readonly RollupMetric[] | undefined): string {
  if (!metrics) return 'd';
  return `m${rollupMetrics.reduce((bits, m, i) => (metrics.includes(m) ? bits | (1 << i) : bits), 0).toString(16)}`;
}

/**
 * A column's value over a bucket's rollup rows (one per flag kept, or a cut week's or month's days), the
 * mean and spread as statistics.ts defines them. Counts are summed as doubles: exact below 2^53.
 */
export function columnSql(column: AggregateColumn, statistics: Statistics = 'exact'): string {
  const m = column.metric;
  switch (column.stat) {
    case 'count': return `sum(${m}_count::float8)`;
    case 'mean': return meanSql(m, statistics);
    case 'min': return `min(${m}_min)`;
    case 'max': return `max(${m}_max)`;
    case 'sd': return sdSql(m, statistics);
    // Of one row per bucket: the readings' own percentiles (local.ts), never a rollup's.
    case 'percentile': return `max(${column.name})`;
  }
}
