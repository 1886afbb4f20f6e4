import type { AsOf } from '../core/asOf.js';
import { coveredDates, describeData, givenParams, type AnswerFacts } from '../core/attribution.js';
import type { QcConfig } from '../core/qc/config.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { downloadColumns, type DownloadArgs } from './download.js';
import type { DownloadQuery } from './schema.js';

/**
 * A /data/download/ query as everything that answers it reads it (the route, as of an instant or not,
 * and its snapshot): its arguments, its CSV's columns, what it is called, and what its files say of
 * their rows. One mapping, so that an answer and its snapshot cannot drift apart.
 */
export function downloadRequest(query: DownloadQuery, stationIds: string[]) {
  const range = { from: query.from_date, to: query.to_date };
  const withStation = Boolean(query.stations);
  const allColumns = query.columns === 'all';
  return {
    stationIds, range,
    /** The CSV's header row: with the stations' id first when several were asked for, the flags last with qc=true. */
    columns: [...(withStation ? ['station_id'] : []), ...downloadColumns(allColumns, Boolean(query.qc))],
    args: (asOf: AsOf | undefined, qc: Record<string, QcConfig> | undefined, spacings?: SeriesSpacings): DownloadArgs => ({
      stationIds, ...range, quality: query.quality, withStation, allColumns, asOf, qc, spacings,
    }),
    /** The data in words; an open range ends at `upTo`. */
    describe: (upTo?: string) => describeData(stationIds, range, { kind: 'readings' }, upTo),
    facts: (upTo: string): AnswerFacts => ({
      params: givenParams([['columns', query.columns], ['quality', query.quality], ['qc', query.qc]]),
      covers: coveredDates(range, upTo),
    }),
  };
}
