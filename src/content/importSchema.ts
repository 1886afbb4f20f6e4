import { z } from 'zod';
import { dateSchema } from '../http/params.js';

const slug = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be a slug: lowercase letters, digits and dashes');
const text = z.string().min(1, 'must not be empty');
const optionalText = z.string().default('');
const nullableText = z.string().nullable().default(null);
// A link the website and RIS export hand to readers: http or https only, never javascript: or data:.
const webUrl = z.string().url().refine((value) => /^https?:$/.test(new URL(value).protocol), 'must be an http or https URL');
const slugs = z.array(slug).default([]);

export const programmeStatuses = ['active', 'completed', 'planned'] as const;
export const educationTypes = ['residency', 'fellowship', 'camp', 'teacher-development'] as const;
export const noteTypes = ['field', 'build', 'observation', 'analysis', 'experiment'] as const;
export const pubTypes = ['peer-reviewed', 'preprint', 'report', 'data-paper', 'public-writing'] as const;
export const provenances = ['own', 'collaborative', 'affiliate'] as const;

/** The content file `envmon import` reads. Unknown keys are errors, so that a misspelt field is not silently lost. */
export const contentFileSchema = z
  .object({
    instruments: z.array(z.object({ slug, name: text, description: optionalText }).strict()).default([]),
    team: z
      .array(
        z
          .object({
            slug, name: text, role: text,
            orcid: z.string().regex(/^\d{4}-\d{4}-\d{4}-\d{3}[\dX]$/, 'must be an ORCID iD like 0000-0002-1825-0097').nullable().default(null),
            research_areas: z.array(z.string()).default([]),
            bio: optionalText,
          })
          .strict(),
      )
      .default([]),
    research: z
      .array(z.object({ slug, title: text, status: z.enum(programmeStatuses), summary: optionalText, instruments: slugs, team: slugs }).strict())
      .default([]),
    education: z
      .array(z.object({ slug, title: text, programme_type: z.enum(educationTypes), summary: optionalText }).strict())
      .default([]),
    notes: z
      .array(
        z
          .object({
            slug, title: text, note_type: z.enum(noteTypes), date: dateSchema,
            location: optionalText, summary: optionalText, body: optionalText,
            latitude: z.number().min(-90).max(90).nullable().default(null),
            longitude: z.number().min(-180).max(180).nullable().default(null),
            altitude_m: z.number().finite().nullable().default(null),
            tags: z.array(z.string()).default([]),
            programmes: slugs,
          })
          .strict(),
      )
      .default([]),
    publications: z
      .array(
        z
          .object({
            id: z.number().int().positive(), title: text, authors: text, journal: optionalText,
            year: z.number().int().min(1800).max(2200),
            pub_type: z.enum(pubTypes), provenance: z.enum(provenances),
            doi: z.string().regex(/^10\.\d{4,9}\/\S+$/, 'must be a DOI like 10.1234/abc').nullable().default(null),
            open_access_url: webUrl.nullable().default(null),
            abstract: nullableText, plain_language_summary: nullableText,
            programmes: slugs,
            linked_authors: z.array(z.object({ team: slug, role: optionalText }).strict()).default([]),
          })
          .strict(),
      )
      .default([]),
  })
  .strict();
export type ContentFile = z.infer<typeof contentFileSchema>;
