import { z } from '../../http/zod.js';
import { stationIdSchema } from '../../http/params.js';
import { fieldAliases, fieldSchemas, moduleChannels } from '../reading.js';

const nullableNumber = z.number().nullable().optional();

/**
 * The posted reading as documented. Rows are not validated with this schema (a batch holds up to
 * 10,000 of them, and parseReading normalises each in a fraction of the time); a test keeps the two
 * in agreement on the field names.
 */
export const ingestReadingSchema = z
  .object({
    timestamp: z.string().openapi({
      format: 'date-time',
      description: 'RFC 3339 date-time, as stations send it; ISO 8601 without an offset is also taken, as UTC. Kept to the millisecond: digits of the second after the third decimal must be zeros (`.999000Z` is `.999Z`), else the row is an error, never rounded. More than INGEST_MAX_FUTURE_SECONDS (300) ahead of the server clock is a row error',
      example: '2026-11-22T10:00:00Z',
    }),
    ...fieldSchemas((f) => nullableNumber.openapi({ description: `In ${f.unit}` })),
    ...Object.fromEntries(Object.entries(fieldAliases).map(([alias, field]) => [alias, nullableNumber.openapi({ description: `Alias of ${field}` })])),
    ...Object.fromEntries(moduleChannels.map((channel) => [channel, nullableNumber.openapi({ description: 'Kept in module_data' })])),
    firmware_version: z.string().max(100).nullable().optional(),
    module_data: z.record(z.unknown()).nullable().optional().openapi({
      description: 'Nested at most 16 levels and at most 16 KiB as JSON; numbers within ±1e9; no NUL or unpaired surrogate in text',
    }),
  })
  .catchall(z.unknown().openapi({ description: 'Unknown channels are kept in module_data' }))
  .openapi('IngestReading');

/** The envelope, validated before any row is looked at. */
export const ingestBodySchema = z
  .object({
    station_id: stationIdSchema,
    readings: z.array(z.unknown()).min(1, 'must not be empty'),
  });

export const ingestDocumentedBodySchema = ingestBodySchema.extend({ readings: z.array(ingestReadingSchema).min(1) }).openapi('IngestBatch');

export const ingestResultSchema = z
  .object({
    accepted: z.number().int().openapi({ description: 'New readings stored' }),
    duplicates: z.number().int().openapi({ description: 'Readings whose (station, timestamp) was already stored or repeated in the batch' }),
    errors: z.number().int().openapi({ description: 'Rows skipped: not storable as sent (a bad timestamp or one finer than the millisecond, a bad value, a number beyond ±1e9, text with a NUL, module_data too deep or too large)' }),
    error_details: z.array(z.object({ index: z.number().int(), reason: z.string() })).openapi({ description: 'At most 100, by row index' }),
  })
  .openapi('IngestResult');
