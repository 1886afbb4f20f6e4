import { givenParams, type AnswerFacts } from './attribution.js';
import type { HistoricalQuery } from './params.js';

/**
 * A /data/historical/ query as its route and its snapshot read it: the station, the window of hours
 * before an instant, what it is called, and what its files say of their rows.
 */
export function historicalRequest(query: HistoricalQuery, stationId: string) {
  return {
    stationId,
    /** The window's start: `hours` before its end. */
    windowStart: (end: string) => new Date(Date.parse(end) - query.hours * 3_600_000).toISOString(),
    describe: () => `readings of station ${stationId} in the ${query.hours} hours before the instant cited`,
    facts: (end: string): AnswerFacts => ({
      params: givenParams([['hours', query.hours], ['quality', query.quality], ['qc', query.qc]]),
      covers: `the ${query.hours} hours before ${end}`,
    }),
  };
}
