import type { ParamError } from '../http/problem.js';
import { z } from '../http/zod.js';
import { stationIdSchema } from '../stations/schema.js';
import { qualityFlags } from './quality.js';

/** An integer query parameter that api.md says is clamped rather than refused when out of range. */
export const clampedInteger = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^[+-]?\d{1,9}$/, 'must be a whole number')
    .transform((value) => Math.min(max, Math.max(min, Number(value))))
    .optional()
    .transform((value) => value ?? fallback)
    .openapi({ type: 'integer', minimum: min, maximum: max, default: String(fallback), description: `Clamped to ${min}..${max}` });

/** A whole UTC day, YYYY-MM-DD, that exists in the calendar. */
export const dateSchema = z
  .string()
  .superRefine((value, ctx) => {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) {
      ctx.addIssue({ code: 'custom', message: 'must be a date as YYYY-MM-DD' });
    } else if (Number.isNaN(Date.parse(`${value}T00:00:00Z`)) || !new Date(`${value}T00:00:00Z`).toISOString().startsWith(value)) {
      ctx.addIssue({ code: 'custom', message: 'must be a date that exists, as YYYY-MM-DD' });
    } else if (value < '0001-01-01') {
      // PostgreSQL has no year 0 (it is 1 BC): the service takes the years 0001 to 9999.
      ctx.addIssue({ code: 'custom', message: 'must be a date from 0001-01-01 to 9999-12-31' });
    }
  })
  .openapi({ format: 'date', example: '2026-01-31' });

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
