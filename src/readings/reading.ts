import { z } from '../http/zod.js';

/**
 * A reading's measured fields, in the order of its columns: the one place a field is defined. Everything
 * else is derived from this table: the columns ingest writes and reads, the rollups' metrics, the
 * fields of the compare and download answers, the ingest aliases, the plausibility check and the
 * schemas of the OpenAPI document. Adding a metric is a row here and a migration (the column and, when
 * it is rolled up, the rollups' columns; `npm run schema` then shows the whole change).
 * - `rolledUp`: summarised by the rollups (aggregates, /stats/).
 * - `compared`: a `param` of /data/compare/.
 * - `download`: its name in downloads; absent when downloads leave it out.
 * - `alias`: a device's name for it, taken on ingest.
 * - `bounds`: inclusive physical plausibility bounds; a reading outside is flagged suspect on ingest.
 */
export const readingFields = [
  { name: 'temperature_c', unit: '°C', rolledUp: true, compared: true, download: 'temperature_c', alias: 'air_temp', bounds: [-50, 60] },
  { name: 'humidity_rh', unit: '% relative humidity', rolledUp: true, compared: true, download: 'humidity_rh', alias: 'air_hum', bounds: [0, 100] },
  { name: 'pressure_hpa', unit: 'hPa', rolledUp: true, compared: true, download: 'pressure_hpa', alias: 'pressure', bounds: [300, 1100] },
  { name: 'altitude_m', unit: 'm', rolledUp: false, compared: false },
  { name: 'pm1_0', unit: 'µg/m³', rolledUp: true, compared: false },
  { name: 'pm2_5', unit: 'µg/m³', rolledUp: true, compared: true, download: 'pm2_5_ugm3', bounds: [0, 1000] },
  { name: 'pm10', unit: 'µg/m³', rolledUp: true, compared: true, download: 'pm10_ugm3' },
  { name: 'co2_ppm', unit: 'ppm', rolledUp: true, compared: true, download: 'co2_ppm' },
  { name: 'co_ppm', unit: 'ppm', rolledUp: true, compared: false },
  { name: 'uv_index', unit: 'UV index', rolledUp: true, compared: false },
] as const satisfies readonly ReadingField[];

type ReadingField = {
  name: string; unit: string; rolledUp: boolean; compared: boolean;
  download?: string; alias?: string; bounds?: readonly [number, number];
};
type Field = (typeof readingFields)[number];

export type NumericField = Field['name'];
export type RollupMetric = Extract<Field, { rolledUp: true }>['name'];
export type CompareParam = Extract<Field, { compared: true }>['name'];

// Non-empty tuples of names, as z.enum wants them.
type Names<T extends string> = readonly [T, ...T[]];
const namesOf = <T extends string>(fields: readonly { name: string }[]) => fields.map((f) => f.name) as unknown as Names<T>;

/** Every measured field, in column order. */
export const numericFields = namesOf<NumericField>(readingFields);
/** The fields the rollups summarise, in column order. */
export const rollupMetrics = namesOf<RollupMetric>(readingFields.filter((f) => f.rolledUp));
/** The fields /data/compare/ takes as `param`. */
export const compareParams = namesOf<CompareParam>(readingFields.filter((f) => f.compared));

/** Device-native names for canonical fields. */
export const fieldAliases: Readonly<Record<string, NumericField>> = Object.fromEntries(
  readingFields.flatMap((f) => ('alias' in f ? [[f.alias, f.name]] : [])),
);

/** Channels with no reading column: kept in module_data under their own names. */
export const moduleChannels = ['soil_temp', 'soil_moist'] as const;

export const qualityFlags = ['ok', 'suspect', 'invalid'] as const;
export type QualityFlag = (typeof qualityFlags)[number];

const checked = readingFields.flatMap((f, index) => ('bounds' in f ? [{ index, min: f.bounds[0], max: f.bounds[1] }] : []));

/**
 * The flag a new reading gets on ingest, from its measured values in `numericFields` order: suspect
 * when any value lies outside its field's plausibility bounds (null never does), ok otherwise.
 */
export function flagFor(values: readonly (number | null | undefined)[]): QualityFlag {
  for (const { index, min, max } of checked) {
    const value = values[index];
    if (value != null && (value < min || value > max)) return 'suspect';
  }
  return 'ok';
}

/** A reading's measured values in `numericFields` order (absent as null). */
export const valuesOf = (reading: Partial<Record<NumericField, number | null>>): (number | null)[] => numericFields.map((f) => reading[f] ?? null);

/** A reading as its readings row holds it, and as ingest stores it when it was parsed already (demo, CLI). */
export type NewReading = { ts: string } & Record<NumericField, number | null> & {
  quality_flag: QualityFlag;
  firmware_version: string | null;
  module_data: Record<string, unknown> | null;
};

/** One zod schema per measured field, keyed by its name, in column order. */
export function fieldSchemas<S extends z.ZodTypeAny>(schemaOf: (field: Field) => S): { [K in NumericField]: S } {
  return Object.fromEntries(readingFields.map((f) => [f.name, schemaOf(f)])) as { [K in NumericField]: S };
}

export const readingSchema = z
  .object({
    timestamp: z.string().datetime().openapi({ example: '2026-11-22T10:00:00.000Z' }),
    ...fieldSchemas((f) => z.number().nullable().openapi({ description: `In ${f.unit}` })),
    quality_flag: z.enum(qualityFlags),
    firmware_version: z.string().nullable(),
    module_data: z.record(z.unknown()).nullable(),
  })
  .openapi('Reading');
export type Reading = z.infer<typeof readingSchema>;

const numberOrNull = (value: unknown): number | null => (typeof value === 'number' ? value : value == null ? null : Number(value));

/** A readings row (columns, or the to_jsonb of one) as the API's Reading. */
export function shapeReading(row: Record<string, unknown>): Reading {
  const reading: Record<string, unknown> = { timestamp: new Date(row.ts as string).toISOString() };
  for (const field of numericFields) reading[field] = numberOrNull(row[field]);
  reading.quality_flag = row.quality_flag;
  reading.firmware_version = (row.firmware_version as string | null) ?? null;
  reading.module_data = (row.module_data as Record<string, unknown> | null) ?? null;
  return reading as Reading;
}

/** A readings row as slonik reads it. */
export const readingRow = z.object({
  ts: z.string(),
  ...fieldSchemas(() => z.number().nullable()),
  quality_flag: z.string(),
  firmware_version: z.string().nullable(),
  module_data: z.record(z.unknown()).nullable(),
});
export type ReadingRow = z.infer<typeof readingRow>;

/** The columns of `readings` a reading fills, in table order, after station_id. */
export const readingColumnNames = ['ts', ...numericFields, 'quality_flag', 'firmware_version', 'module_data'] as const;
