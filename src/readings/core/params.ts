import type { ParamError } from '../http/problem.js';
import { z } from '../http/zod.js';
import { clampedInteger, dateSchema, stationIdSchema, stationListSchema } from '../http/params.js';
import { compareParams, qualityFlags, rollupMetrics } from './reading.js';

export const qualitySchema = z.enum(qualityFlags).optional().openapi({ description: 'Keep only readings with this flag' });

/**
 * `station` where api.md allows a default: required unless DEFAULT_STATION is set. The handler applies
 * the default (stationParam), so the schema takes it as optional and the document says which it is.
 */
const stationWithDefault = (defaultStation: string | undefined) =>
  stationIdSchema.optional().openapi({
    param: { required: !defaultStation },
    description: defaultStation ? `A station_id; ${defaultStation} (DEFAULT_STATION) when omitted` : 'A station_id',
  });

const dateRange = <T extends z.ZodRawShape>(shape: T) =>
  z.object({
    ...shape,
    from_date: dateSchema.optional().openapi({ description: 'First UTC day, inclusive; not after to_date (400)' }),
    to_date: dateSchema.optional().openapi({ description: 'Last UTC day, inclusive' }),
  });

/** Rules across parameters, reported in the same 400 as the schema's. */
export function dateRangeErrors(q: { from_date?: string; to_date?: string }): ParamError[] {
  return q.from_date && q.to_date && q.from_date > q.to_date ? [{ param: 'from_date', message: 'must not be after to_date' }] : [];
}

export const latestQuerySchema = z.object({ station: stationIdSchema });

export const historicalQuerySchema = (defaultStation: string | undefined) => z.object({
  station: stationWithDefault(defaultStation),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
});

export const aggregatePeriods = ['hour', 'day', 'week', 'month'] as const;
export type AggregatePeriod = (typeof aggregatePeriods)[number];

const metricListPattern = `^ *(${rollupMetrics.join('|')}) *(, *(${rollupMetrics.join('|')}) *)*$`;

/** Comma-separated metric names (spaces around the commas allowed); each named once, in the rollups' order. */
const metricListSchema = z
  .string()
  .regex(new RegExp(metricListPattern), `must be comma-separated metric names from ${rollupMetrics.join(', ')}`)
  .transform((value) => {
    const named = value.split(',').map((name) => name.trim());
    return rollupMetrics.filter((m) => named.includes(m));
  })
  .openapi({
    type: 'string', pattern: metricListPattern, example: 'temperature_c,pm10',
    description: `Metrics to summarise, comma-separated (${rollupMetrics.join(', ')}): each result then gives, per metric, \`<metric>_count\`, \`_mean\`, \`_min\`, \`_max\` and \`_sd\`, in place of the default fields`,
  });

export const aggregateQuerySchema = (defaultStation: string | undefined) => dateRange({
  station: stationWithDefault(defaultStation),
  period: z.enum(aggregatePeriods).default('day'),
  quality: qualitySchema,
  metrics: metricListSchema.optional(),
  output: z.enum(['json', 'csv', 'parquet']).default('json').openapi({
    description: 'json; csv (text/csv with the licence and citation in comment lines); parquet (typed columns, the licence and citation in the file\'s key-value metadata)',
  }),
});
export type AggregateQuery = z.infer<ReturnType<typeof aggregateQuerySchema>>;

export const maxCompareStations = 10;

export const compareQuerySchema = z.object({
  stations: stationListSchema(maxCompareStations),
  param: z.enum(compareParams).default('temperature_c'),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
});
export type CompareQuery = z.infer<typeof compareQuerySchema>;

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
