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

export const dateRange = <T extends z.ZodRawShape>(shape: T) =>
  z.object({
    ...shape,
    from_date: dateSchema.optional().openapi({ description: 'First UTC day, inclusive; not after to_date (400)' }),
    to_date: dateSchema.optional().openapi({ description: 'Last UTC day, inclusive' }),
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
