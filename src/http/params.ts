import { z } from './zod.js';

// Query and path parameter validators that more than one capability uses.

const stationIdPattern = '[A-Za-z0-9][A-Za-z0-9_.-]{0,63}';

/** A station_id as it appears in paths and queries. */
export const stationIdSchema = z
  .string()
  .regex(new RegExp(`^${stationIdPattern}$`), 'must be 1 to 64 letters, digits, dots, dashes or underscores')
  // A demo station: the docs page's "Try it out" then succeeds on the demo data as it stands.
  .openapi({ example: 'alpine-01' });

/**
 * Comma-separated station ids (spaces around the commas allowed), at most `max`; a station named twice
 * counts once. The document carries the same rule as a pattern, so that clients can check it too.
 */
export const stationListSchema = (max: number, example?: string) => {
  const pattern = `^ *${stationIdPattern} *(, *${stationIdPattern} *){0,${max - 1}}$`;
  return z
    .string()
    .regex(new RegExp(pattern), `must be 1 to ${max} comma-separated station ids`)
    .transform((value) => [...new Set(value.split(',').map((id) => id.trim()))])
    .openapi({ type: 'string', pattern, minLength: 1, description: `Comma-separated station_ids, at most ${max}`, ...(example ? { example } : {}) });
};

/**
 * An integer query parameter that the API clamps rather than refused when out of range: any
 * whole number is valid input, so the document gives no minimum or maximum, only the clamp.
 */
export const clampedInteger = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^[+-]?\d+$/, 'must be a whole number')
    .transform((value) => Math.min(max, Math.max(min, Number(value))))
    .optional()
    .transform((value) => value ?? fallback)
    // The query string carries text; the document describes the integer it means, default included.
    .openapi({ type: 'integer', default: fallback as unknown as string, description: `Clamped to ${min}..${max}` });

/**
 * A positive whole number of any length (a page, a record id). One too large for any list or column is
 * still valid input, answered as not found, so it is read as the largest safe integer.
 */
export const positiveInteger = z
  .string()
  .regex(/^0*[1-9]\d*$/, 'must be a positive whole number')
  .transform((value) => Math.min(Number(value), Number.MAX_SAFE_INTEGER))
  .openapi({ type: 'integer', minimum: 1 });

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
  // No example: a fixed date would name a day without data on most servers, and a request made from the
  // docs page with it would return nothing.
  .openapi({ format: 'date' });
