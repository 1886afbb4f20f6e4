import type { ParamError } from '../../http/problem.js';
import { z } from '../../http/zod.js';
import { clampedInteger, dateSchema, stationIdSchema } from '../../http/params.js';
import { asOfSchema } from './asOf.js';
import { qualityFlags } from '../reading.js';

export const qualitySchema = z.enum(qualityFlags).optional().openapi({ description: 'Keep only readings with this flag' });

/**
 * `station` where the API allows a default: required unless DEFAULT_STATION is set. The handler applies
 * the default (stationParam), so the schema takes it as optional and the document says which it is.
 */
export const stationWithDefault = (defaultStation: string | undefined) =>
  stationIdSchema.optional().openapi({
    param: { required: !defaultStation },
    description: defaultStation ? `A station_id; ${defaultStation} (DEFAULT_STATION) when omitted` : 'A station_id',
  });

/** `shape` with from_date and to_date: UTC days, or with `zoned` the days of the zone `tz` names. */
export const dateRange = <T extends z.ZodRawShape>(shape: T, zoned = false) =>
  z.object({
    ...shape,
    from_date: dateSchema.optional().openapi({ description: `First ${zoned ? 'day (of the zone `tz` names, UTC without it)' : 'UTC day'}, inclusive; not after to_date (400)` }),
    to_date: dateSchema.optional().openapi({ description: `Last ${zoned ? 'day (of the zone `tz` names, UTC without it)' : 'UTC day'}, inclusive` }),
  });

/** Rules across parameters, reported in the same 400 as the schema's. */
export function dateRangeErrors(q: { from_date?: string; to_date?: string }): ParamError[] {
  return q.from_date && q.to_date && q.from_date > q.to_date ? [{ param: 'from_date', message: 'must not be after to_date' }] : [];
}

/** `qc=true`: each metric's QARTOD flags with the readings. */
export const qcSchema = z
  .enum(['true', 'false'])
  .optional()
  // Absent when false, so that a snapshot's normalised query is the same with qc=false as without it.
  .transform((value) => (value === 'true' ? true : undefined))
  .openapi({
    type: 'boolean',
    description: 'true: each metric\'s aggregate QARTOD flag (`<metric>_qc`: 1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing) after the columns, from the tests of the station\'s quality-control configuration (/stations/{station_id}/qc/) over its whole series in time order',
  });

export const aggregatePeriods = ['hour', 'day', 'week', 'month'] as const;
export type AggregatePeriod = (typeof aggregatePeriods)[number];


/** /data/historical/'s parameters: its readings are also what a snapshot of it holds. */
export const historicalQuerySchema = (defaultStation: string | undefined) => z.object({
  station: stationWithDefault(defaultStation),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
  as_of: asOfSchema,
  qc: qcSchema,
});
export type HistoricalQuery = z.infer<ReturnType<typeof historicalQuerySchema>>;

/** Whole percentiles, 1 to 99, comma-separated: each once, ascending. */
const percentilesPattern = '^ *(0?[1-9]|[1-9][0-9]) *(, *(0?[1-9]|[1-9][0-9]) *)*$';
export const percentilesSchema = z
  .string()
  .regex(new RegExp(percentilesPattern), 'must be comma-separated whole percentiles from 1 to 99, such as 5,25,50,75,95')
  .transform((value) => [...new Set(value.split(',').map(Number))].sort((a, b) => a - b))
  .openapi({
    type: 'string', pattern: percentilesPattern, example: '5,25,50,75,95',
    description: 'Whole percentiles (1 to 99), comma-separated: each result then gives `<metric>_pNN` for each metric it gives statistics of, exact as PostgreSQL\'s percentile_cont over the bucket\'s readings (linear between the two nearest values)',
  });

/** A bucket's column of a percentile of a metric: temperature_c_p05. */
export const percentileName = (metric: string, percentile: number) => `${metric}_p${String(percentile).padStart(2, '0')}`;

/** A completeness threshold in percent (0 to 100): statistics of a bucket covered less are null, as openair's data.thresh. */
export const minCoverageSchema = z
  .string()
  .regex(/^ *[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)? *$/, 'must be a percentage from 0 to 100')
  .transform(Number)
  // -0 is 0; any other negative number is below the range.
  .refine((value) => value >= 0 && value <= 100, 'must be a percentage from 0 to 100')
  .openapi({
    type: 'number', minimum: 0, maximum: 100, example: '75',
    description: 'A completeness threshold, as openair\'s data.thresh: a bucket whose coverage_pct is below it keeps its count, expected and coverage_pct (and each metric\'s count), and gives null for every other statistic',
  });
