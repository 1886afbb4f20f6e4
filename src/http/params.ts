import { z } from './zod.js';

// Query and path parameter validators that more than one capability uses.

/** A station_id as it appears in paths and queries. */
export const stationIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, dots, dashes or underscores');

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
