import type { ParamError } from '../http/problem.js';
import { z } from '../http/zod.js';
import { clampedInteger, dateSchema, stationIdSchema } from '../http/params.js';
import { qualityFlags } from './quality.js';

export const qualitySchema = z.enum(qualityFlags).optional().openapi({ description: 'Keep only readings with this flag' });

const optionalStation = stationIdSchema.optional().openapi({ description: 'A station_id; DEFAULT_STATION when omitted and set' });

const dateRange = <T extends z.ZodRawShape>(shape: T) =>
  z.object({ ...shape, from_date: dateSchema.optional(), to_date: dateSchema.optional() });

/** Rules across parameters, reported in the same 400 as the schema's. */
export function dateRangeErrors(q: { from_date?: string; to_date?: string }): ParamError[] {
  return q.from_date && q.to_date && q.from_date > q.to_date ? [{ param: 'from_date', message: 'must not be after to_date' }] : [];
}

export const latestQuerySchema = z.object({ station: stationIdSchema });

export const historicalQuerySchema = z.object({
  station: optionalStation,
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
});

export const aggregatePeriods = ['hour', 'day', 'week', 'month'] as const;
export type AggregatePeriod = (typeof aggregatePeriods)[number];

export const aggregateQuerySchema = dateRange({
  station: optionalStation,
  period: z.enum(aggregatePeriods).default('day'),
  quality: qualitySchema,
  output: z.enum(['json', 'csv']).default('json'),
});
export type AggregateQuery = z.infer<typeof aggregateQuerySchema>;

export const compareParams = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'pm10', 'co2_ppm'] as const;
export type CompareParam = (typeof compareParams)[number];
export const maxCompareStations = 10;

/** A comma-separated list of station ids, each valid, none repeated. */
export const stationListSchema = (max: number) =>
  z
    .string()
    .transform((value) => value.split(',').map((s) => s.trim()).filter((s) => s !== ''))
    .pipe(
      z
        .array(stationIdSchema)
        .min(1, 'must name at least one station')
        .max(max, `must name at most ${max} stations`)
        .refine((ids) => new Set(ids).size === ids.length, 'must not name a station twice'),
    )
    .openapi({ type: 'string', description: `Comma-separated station_ids, at most ${max}`, example: 'alpine-01,coast-01' });

export const compareQuerySchema = z.object({
  stations: stationListSchema(maxCompareStations),
  param: z.enum(compareParams).default('temperature_c'),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
});
export type CompareQuery = z.infer<typeof compareQuerySchema>;

export const maxDownloadStations = 50;

export const downloadQuerySchema = dateRange({
  station: optionalStation,
  stations: stationListSchema(maxDownloadStations).optional(),
  quality: qualitySchema,
});
export type DownloadQuery = z.infer<typeof downloadQuerySchema>;

export function downloadErrors(q: DownloadQuery): ParamError[] {
  return [
    ...(q.station && q.stations ? [{ param: 'stations', message: 'cannot be combined with station: use one' }] : []),
    ...dateRangeErrors(q),
  ];
}
