import { z } from '../http/zod.js';
import { clampedInteger, dateSchema, positiveInteger } from '../http/params.js';
import { noteTypes, provenances, pubTypes } from './importSchema.js';

const slug = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be a slug: lowercase letters, digits and dashes');

/** `page`: a positive whole number; anything else is a 400, not a silent page 1; one past the last page is a 404. */
export const pageSchema = positiveInteger
  .optional()
  .transform((value) => value ?? 1)
  .openapi({ type: 'integer', minimum: 1, default: 1 as unknown as string, description: '20 items per page' });

export const notesQuerySchema = z.object({
  type: z.enum(noteTypes).optional(),
  programme: slug.optional().openapi({ description: 'Research programme slug' }),
  from_date: dateSchema.optional(),
  page: pageSchema,
  output: z.enum(['json', 'geojson']).default('json'),
});

export const publicationsQuerySchema = z.object({
  pub_type: z.enum(pubTypes).optional(),
  provenance: z.enum(provenances).optional(),
  year: z.string().regex(/^[1-9]\d{0,3}$/, 'must be a year like 2026').transform(Number).optional().openapi({ type: 'integer', minimum: 1, maximum: 9999 }),
  page: pageSchema,
});

export const slugParamsSchema = z.object({ slug });
export const idParamsSchema = z.object({ id: positiveInteger });

export const activityQuerySchema = z.object({ limit: clampedInteger(20, 1, 50) });

export const searchQuerySchema = z.object({
  q: z.string().trim().min(1, 'must not be blank').max(200).openapi({ pattern: '\\S', maxLength: 200, description: 'Words, "quoted phrases", OR, -excluded; at most 200 characters once trimmed' }),
});
