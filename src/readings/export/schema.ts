import type { ParamError } from '../../http/problem.js';
import { stationIdSchema, stationListSchema } from '../../http/params.js';
import { z } from '../../http/zod.js';
import { asOfSchema } from '../core/asOf.js';
import { dateRange, dateRangeErrors, qcSchema, qualitySchema } from '../core/params.js';

export const maxDownloadStations = 50;

/** `station` or `stations`: the cross-check (downloadErrors, stationParam) enforces one, and only one. */
export const downloadQuerySchema = (defaultStation: string | undefined) => dateRange({
  station: stationIdSchema.optional().openapi({
    description: `One station_id${defaultStation ? `; ${defaultStation} (DEFAULT_STATION) when neither station nor stations is given` : ''}. Give station or stations, not both.`,
  }),
  stations: stationListSchema(maxDownloadStations).optional(),
  quality: qualitySchema,
  as_of: asOfSchema,
  qc: qcSchema.openapi({
    description: 'true: each metric\'s aggregate QARTOD flag (`<metric>_qc`: 1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing) in a column after the others, for each metric the CSV gives, from the tests of the station\'s quality-control configuration (/stations/{station_id}/qc/) over its whole series in time order. A Parquet download always has these columns.',
  }),
  columns: z.enum(['default', 'all']).default('default').openapi({
    description: 'CSV columns: `default` gives timestamp_utc, temperature_c, humidity_rh, pressure_hpa, pm2_5_ugm3, pm10_ugm3, co2_ppm and quality_flag; `all` adds altitude_m, pm1_0, co_ppm, uv_index, firmware_version and module_data (JSON text) after them (a firmware_version a spreadsheet would run as a formula is given behind a single quote). A Parquet download always has every column.',
  }),
  output: z.enum(['csv', 'parquet']).default('csv').openapi({
    description: 'csv, or parquet: every column of `columns=all`, typed (timestamp_utc a UTC timestamp in microseconds, measurements doubles, quality_flag, station_id, firmware_version and module_data dictionary-encoded strings, module_data as JSON text), the licence and citation in the file\'s key-value metadata (license, citation)',
  }),
});
export type DownloadQuery = z.infer<ReturnType<typeof downloadQuerySchema>>;

export function downloadErrors(q: DownloadQuery): ParamError[] {
  return [
    ...(q.station && q.stations ? [{ param: 'stations', message: 'cannot be combined with station: use one' }] : []),
    ...dateRangeErrors(q),
  ];
}
