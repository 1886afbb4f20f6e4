import type { RollupMetric } from '../reading.js';

/**
 * How an answer's means and standard deviations are computed.
 * - `exact` (every live answer, and every snapshot made since 0.14.0): exact sums of each value's decimal,
 *   rounded once (envmon_decimal, envmon_mean, envmon_sd, migration 0032). Any order of rows, any merge
 *   of rollup levels gives the same bits, so a rollup, a read as of an instant and a GROUP BY over the
 *   readings agree.
 * - `ordered-doubles` (snapshots made before 0.14.0, whose bytes may never change): doubles summed in
 *   timestamp order from the readings, and the spread from M2 (migration 0017). Only a snapshot's pin
 *   asks for it, and only the paths that sum raw readings give it.
 */
export type Statistics = 'exact' | 'ordered-doubles';

/** The statistics of a metric a rollup row holds, by name, as every rollup level and raw summary gives them. */
export const statisticsColumns = (m: RollupMetric, statistics: Statistics = 'exact') =>
  `${m}_count, ${m}_sum, ${m}_min, ${m}_max, ${statistics === 'exact' ? `${m}_sumsq` : `${m}_m2`}`;

/**
 * The decimal a raw summary's sums read of `value`, named `<m>_d`: taken once per reading in a subquery
 * the planner keeps apart (see rawStatistics). Absent for `ordered-doubles`, which sums the doubles.
 */
export const decimalOf = (m: RollupMetric, value: string, statistics: Statistics = 'exact') =>
  (statistics === 'exact' ? `, envmon_decimal(${value}) as ${m}_d` : '');

/**
 * A rollup row's statistics of metric `m` summed from raw readings whose value is the column `m` and, for
 * `exact`, whose decimal is `<m>_d` (decimalOf): count, sum, min, max and sum of squares (or M2).
 */
export function rawStatistics(m: RollupMetric, statistics: Statistics = 'exact'): string {
  const common = `count(${m}) as ${m}_count, min(${m}) as ${m}_min, max(${m}) as ${m}_max`;
  return statistics === 'exact'
    ? `${common}, sum(${m}_d) as ${m}_sum, sum(${m}_d * ${m}_d) as ${m}_sumsq`
    : `${common}, sum(${m}) as ${m}_sum, envmon_m2(${m}) as ${m}_m2`;
}

/** The mean of metric `m` over a bucket's rollup rows (one per flag kept, or a cut week's or month's days). */
export const meanSql = (m: RollupMetric, statistics: Statistics = 'exact', prefix = '') => (statistics === 'exact'
  ? `envmon_mean(sum(${prefix}${m}_count), sum(${prefix}${m}_sum))`
  : `sum(${prefix}${m}_sum) / nullif(sum(${prefix}${m}_count::float8), 0)`);

/** The sample standard deviation of metric `m` over a bucket's rollup rows; null below two values. */
export const sdSql = (m: RollupMetric, statistics: Statistics = 'exact', prefix = '') => (statistics === 'exact'
  ? `envmon_sd(sum(${prefix}${m}_count), sum(${prefix}${m}_sum), sum(${prefix}${m}_sumsq))`
  : `envmon_sd_merge(array[${prefix}${m}_count::float8, coalesce(${prefix}${m}_sum, 0), ${prefix}${m}_m2])`);
