import { clampedInteger, stationListSchema } from '../../http/params.js';
import { z } from '../../http/zod.js';
import { asOfSchema } from '../core/asOf.js';
import { aggregatePeriods, dateRange, minCoverageSchema, percentilesSchema, qualitySchema, stationWithDefault } from '../core/params.js';
import { tzSchema } from '../core/timeZone.js';
import { compareParams, rollupMetrics } from '../reading.js';
import { profileSlots } from './profile.js';

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
  tz: tzSchema.optional(),
  percentiles: percentilesSchema.optional(),
  min_coverage: minCoverageSchema.optional(),
}, true);
export type AggregateQuery = z.infer<ReturnType<typeof aggregateQuerySchema>>;

export const maxCompareStations = 10;

export const compareQuerySchema = z.object({
  stations: stationListSchema(maxCompareStations, 'alpine-01,coast-01'),
  param: z.enum(compareParams).default('temperature_c'),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
  as_of: asOfSchema,
  tz: tzSchema.optional().openapi({ description: 'An IANA time zone: buckets of an hour start on its clock\'s hours (Newfoundland\'s at :30 of UTC), and the timestamps carry its offset then' }),
});
export type CompareQuery = z.infer<typeof compareQuerySchema>;


/** /data/profile/'s parameters: a metric's cycle over the slots of a zone's calendar. */
export const profileQuerySchema = (defaultStation: string | undefined) => dateRange({
  station: stationWithDefault(defaultStation),
  param: z.enum(rollupMetrics).default('temperature_c').openapi({ description: 'The metric profiled' }),
  by: z.enum(profileSlots).default('hour_of_day').openapi({
    description: 'hour_of_day: slots 0 to 23 of the zone\'s clock (the diurnal cycle); day_of_week: 1 (Monday) to 7; month_of_year: 1 to 12',
  }),
  tz: tzSchema.optional(),
  quality: qualitySchema,
  percentiles: percentilesSchema.optional(),
  output: z.enum(['json', 'csv', 'parquet']).default('json').openapi({
    description: 'json; csv (text/csv with the licence and citation in comment lines); parquet (slot and count 64-bit integers, the rest doubles, the licence and citation in its key-value metadata)',
  }),
}, true);
export type ProfileQuery = z.infer<ReturnType<typeof profileQuerySchema>>;
