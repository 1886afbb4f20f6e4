import { rollupMetrics, type RollupMetric } from '../reading.js';

/** What an aggregate gives of a metric per bucket: values counted, mean, min, max, sample standard deviation. */
export const metricStats = ['count', 'mean', 'min', 'max', 'sd'] as const;
export type MetricStat = (typeof metricStats)[number];

/** One column of an aggregate beside period_start and count, named `<metric>_<stat>`. */
export type AggregateColumn = { metric: RollupMetric; stat: MetricStat; name: string };

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

/** The columns of an aggregate that asks for `metrics`: each one's five statistics, in the order of rollupMetrics. */
export function columnsOf(metrics: readonly RollupMetric[] | undefined): readonly AggregateColumn[] {
  if (!metrics) return defaultAggregateColumns;
  return rollupMetrics.filter((m) => metrics.includes(m)).flatMap((m) => metricStats.map((stat) => column(m, stat)));
}

/** A short, stable name for a set of columns (prepared statements and cache keys): the default, or the metrics as bits. */
export function columnsKey(metrics: readonly RollupMetric[] | undefined): string {
  if (!metrics) return 'd';
  return `m${rollupMetrics.reduce((bits, m, i) => (metrics.includes(m) ? bits | (1 << i) : bits), 0).toString(16)}`;
}
