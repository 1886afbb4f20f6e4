import type { ParamError } from '../../http/problem.js';
import { stationIdSchema, stationListSchema } from '../../http/params.js';
import { z } from '../../http/zod.js';
import { dateRange, dateRangeErrors, qualitySchema } from '../core/params.js';

export const maxDownloadStations = 50;

/** `station` or `stations`: the cross-check (downloadErrors, stationParam) enforces one, and only one. */
export const downloadQuerySchema = (defaultStation: string | undefined) => dateRange({
  station: stationIdSchema.optional().openapi({
    description: `One station_id${defaultStation ? `; ${defaultStation} (DEFAULT_STATION) when neither station nor stations is given` : ''}. Give station or stations, not both.`,
  }),
  stations: stationListSchema(maxDownloadStations).optional(),
  quality: qualitySchema,
  output: z.enum(['csv', 'parquet']).default('csv').openapi({
    description: 'csv, or parquet: the same columns typed (timestamp_utc a UTC timestamp in microseconds, doubles, quality_flag and station_id dictionary-encoded strings), the licence and citation in the file\'s key-value metadata (license, citation)',
  }),
});
export type DownloadQuery = z.infer<ReturnType<typeof downloadQuerySchema>>;

export function downloadErrors(q: DownloadQuery): ParamError[] {
  return [
    ...(q.station && q.stations ? [{ param: 'stations', message: 'cannot be combined with station: use one' }] : []),
    ...dateRangeErrors(q),
  ];
}
