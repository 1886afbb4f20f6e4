import { clampedInteger, stationListSchema } from '../../http/params.js';
import { z } from '../../http/zod.js';
import { asOfSchema } from '../core/asOf.js';
import { aggregatePeriods, dateRange, qualitySchema, stationWithDefault } from '../core/params.js';
import { compareParams, rollupMetrics } from '../reading.js';

const metricListPattern = `^ *(${rollupMetrics.join('|')}) *(, *(${rollupMetrics.join('|')}) *)*$`;

/** Comma-separated metric names (spaces around the commas allowed); each named once, in the rollups' order. */
const metricListSchema = z
  .string()
  .regex(new RegExp(metricListPattern), `must be comma-separated metric names from ${rollupMetrics.join(', ')}`)
  .transform((value) => {
    const named = value.split(',').map((name) => name.trim());
    return rollupMetrics.filter((m) => named.includes(m));
  })
  .openapi({
    type: 'string', pattern: metricListPattern, example: 'temperature_c,pm10',
    description: `Metrics to summarise, comma-separated (${rollupMetrics.join(', ')}): each result then gives, per metric, \`<metric>_count\`, \`_mean\`, \`_min\`, \`_max\` and \`_sd\`, in place of the default fields`,
  });

export const aggregateQuerySchema = (defaultStation: string | undefined) => dateRange({
  station: stationWithDefault(defaultStation),
  period: z.enum(aggregatePeriods).default('day'),
  quality: qualitySchema,
  metrics: metricListSchema.optional(),
  as_of: asOfSchema,
  qc: z.enum(['pass']).optional().openapi({
    description: 'pass: each metric\'s statistics leave out the readings whose aggregate QARTOD flag for that metric is not 1 (pass), per metric, so that a stuck humidity sensor does not remove a good temperature; `count`, `expected` and `coverage_pct` still count every reading. Metrics without tests in the station\'s quality-control configuration keep every value. Summed from the readings, as `as_of` is.',
  }),
  output: z.enum(['json', 'csv', 'parquet']).default('json').openapi({
    description: 'json; csv (text/csv with the licence and citation in comment lines); parquet (typed columns, the licence and citation in the file\'s key-value metadata)',
  }),
});
export type AggregateQuery = z.infer<ReturnType<typeof aggregateQuerySchema>>;

export const maxCompareStations = 10;

export const compareQuerySchema = z.object({
  stations: stationListSchema(maxCompareStations, 'alpine-01,coast-01'),
  param: z.enum(compareParams).default('temperature_c'),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
  as_of: asOfSchema,
});
export type CompareQuery = z.infer<typeof compareQuerySchema>;

