import { z } from '../http/zod.js';
import { clampedInteger, dateSchema } from '../http/params.js';
import { noteTypes, provenances, pubTypes } from './importSchema.js';

const slug = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be a slug: lowercase letters, digits and dashes');

/** `page`: a positive whole number; anything else is a 400, not a silent page 1. */
export const pageSchema = z
  .string()
  .regex(/^[1-9]\d{0,8}$/, 'must be a positive whole number')
  .transform(Number)
  .optional()
  .transform((value) => value ?? 1)
  .openapi({ type: 'integer', minimum: 1, default: '1', description: '20 items per page' });

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
  year: z.string().regex(/^\d{4}$/, 'must be a year like 2026').transform(Number).optional().openapi({ type: 'integer' }),
  page: pageSchema,
});

export const slugParamsSchema = z.object({ slug });
export const idParamsSchema = z.object({
  id: z.string().regex(/^[1-9]\d{0,8}$/, 'must be a positive whole number').transform(Number).openapi({ type: 'integer' }),
});

export const activityQuerySchema = z.object({ limit: clampedInteger(20, 1, 50) });

export const searchQuerySchema = z.object({
  q: z.string().trim().min(1, 'must not be blank').max(200).openapi({ description: 'Words, "quoted phrases", OR, -excluded' }),
});
