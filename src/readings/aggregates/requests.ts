import type { AsOf } from '../core/asOf.js';
import { coveredDates, describeData, givenParams, type AnswerFacts, type Dataset } from '../core/attribution.js';
import type { QcConfig } from '../core/qc/config.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { bucketZone } from '../core/timeZone.js';
import { compareInterval, type AggregateArgs, type CompareArgs } from './queries.js';
import type { AggregateQuery, CompareQuery } from './schema.js';

/**
 * A /data/aggregate/ query as everything that answers it reads it (the route, as of an instant or not,
 * and its snapshot): its arguments, what it is called, and what its files say of their rows. One mapping,
 * so that an answer and its snapshot cannot drift apart.
 */
export function aggregateRequest(query: AggregateQuery, stationId: string) {
  const tz = bucketZone(query.tz);
  const range = { from: query.from_date, to: query.to_date };
  const dataset: Dataset = { kind: 'aggregate', period: query.period, tz };
  return {
    stationId, tz, range, dataset,
    args: (asOf: AsOf | undefined, qcPass: QcConfig | undefined, spacings?: SeriesSpacings): AggregateArgs => ({
      stationId, period: query.period, from: query.from_date, to: query.to_date, quality: query.quality, metrics: query.metrics, asOf, qcPass, spacings,
      tz, percentiles: query.percentiles, minCoverage: query.min_coverage,
    }),
    /** The data in words; an open range ends at `upTo`. */
    describe: (upTo?: string) => describeData([stationId], range, dataset, upTo),
    facts: (upTo: string): AnswerFacts => ({
      zone: tz,
      params: givenParams([
        ['period', query.period], ['metrics', query.metrics], ['quality', query.quality], ['qc', query.qc],
        ['percentiles', query.percentiles], ['min_coverage', query.min_coverage],
      ]),
      // from_date and to_date are the zone's dates.
      covers: coveredDates(range, upTo, tz),
    }),
  };
}

/**
 * A /data/compare/ query as its route and its snapshot read it: the stations in one order, the buckets'
 * width and zone, what it is called, and what its files say of their rows.
 */
export function compareRequest(query: CompareQuery) {
  const stationIds = [...query.stations].sort();
  const tz = bucketZone(query.tz);
  const seconds = compareInterval(query.hours);
  return {
    stationIds, tz, seconds,
    /** The arguments as of `asOf` (now when absent), the buckets ending at `windowEnd` when given (a snapshot's). */
    args: (asOf: AsOf | undefined, windowEnd?: string): CompareArgs => ({
      stationIds, param: query.param, hours: query.hours, seconds, quality: query.quality, asOf, windowEnd, tz,
    }),
    describe: () => `${query.param}${tz ? ` (${tz} time)` : ''} of stations ${stationIds.join(', ')} in the ${query.hours} hours before the instant cited`,
    facts: (windowEnd: string): AnswerFacts => ({
      zone: tz,
      params: givenParams([['param', query.param], ['hours', query.hours], ['quality', query.quality], ['interval_seconds', seconds]]),
      covers: `the ${query.hours} hours before ${windowEnd}, in buckets of ${seconds} s`,
    }),
  };
}
