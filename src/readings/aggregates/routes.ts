import { readCurrent } from '../../db/rollupsCurrent.js';
import { parquetType } from '../../formats/parquet.js';
import { addRoute, type Api } from '../../http/route.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { z } from '../../http/zod.js';
import { attributeDownload, citation, downloadFileName, parquetMetadata, preamble } from '../core/attribution.js';
import { dateRangeErrors } from '../core/params.js';
import { acceptDatetimeHeader, asOfPools, mementoHeader, readAsOf } from '../core/asOf.js';
import { requireStation, requireStations, stationParam } from '../core/scope.js';
import { qcConfigOf } from '../core/qc/config.js';
import { createAggregateReader } from './cache.js';
import { aggregateAsOf, aggregateCsvOutput, aggregateJsonOutput, aggregateParquetOutput } from './outputs.js';
import { compareStations } from './queries.js';
import { aggregateRequest, compareRequest } from './requests.js';
import { aggregateQuerySchema, compareQuerySchema, profileQuerySchema } from './schema.js';
import { profileColumns, profileCsv, profileParquet, profileResult, readProfile } from './profile.js';
import { aggregateResultSchema } from './shape.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { readCost } from '../core/cost.js';
import { cutsUtcHoursNow } from '../core/timeZone.js';

const aggregateSchema = z
  .object({ station: z.string(), period: z.string(), tz: z.string().optional().openapi({ description: 'With tz: the zone the buckets are of' }), count: z.number().int(), results: z.array(aggregateResultSchema) })
  .openapi('Aggregate');

const profileSchema = z
  .object({
    station: z.string(), param: z.string(), by: z.string(), tz: z.string(),
    results: z.array(z.object({
      slot: z.number().int(), count: z.number().int().openapi({ description: 'Values of the metric in the slot' }),
      mean: z.number().nullable(), sd: z.number().nullable().openapi({ description: 'Sample standard deviation (null below two values)' }),
    }).catchall(z.number().nullable().openapi({ description: 'With percentiles: pNN, the NNth percentile of the slot\'s values (percentile_cont)' }))),
  })
  .openapi('Profile');

const compareSchema = z
  .object({
    param: z.string(),
    hours: z.number().int(),
    quality: z.string().nullable(),
    tz: z.string().optional().openapi({ description: 'With tz: the zone the buckets start on and are named in' }),
    interval_seconds: z.number().int(),
    timestamps: z.array(z.string().datetime({ offset: true })),
    series: z.record(z.array(z.number().nullable())),
  })
  .openapi('Comparison');

/** /data/aggregate/ and /data/compare/: statistics per bucket from the rollups, and stations side by side. */
export function addAggregateRoutes(api: Api, spacings: SeriesSpacings): void {
  const { config, db } = api.deps;
  const readAggregate = createAggregateReader(db, config.aggregateCacheMb * 1024 * 1024);

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/aggregate/', operationId: 'aggregateReadings', cache: cachePolicy.live, tag: 'Readings',
      cost: (query, ctx) => readCost(query, ctx, query.qc === 'pass' || Boolean(query.percentiles?.length) || cutsUtcHoursNow(query.tz)),
      summary: 'Count, mean, min, max, standard deviation and coverage of the metrics per hour, day, week or month',
      description: 'Exact, and the same to the bit however the rows are read: each mean and sample standard deviation is computed from exact decimal sums of the readings\' values (each value the shortest decimal that reads back as the stored number) and rounded to a double once, so the rollups, a read `as_of`, `qc=pass`, any `tz` and a snapshot give the same figures as a GROUP BY computing that definition over the raw readings; count, min and max are the GROUP BY\'s. Weeks start Monday 00:00 UTC, months on the 1st; buckets without readings are absent. Without `metrics` each result has temperature_c_mean, _min and _max, humidity_rh_mean, pressure_hpa_mean and pm2_5_mean, then the standard deviation of each metric it gives a mean of, `expected` and `coverage_pct`; with `metrics` it has, per metric named, `<metric>_count`, `_mean`, `_min`, `_max` and `_sd`, then `expected` and `coverage_pct`. `expected` is the readings the station\'s `interval_seconds` implies for the part of the bucket inside the range (rounded up); `coverage_pct` is `count` against it. `output=csv` gives the same columns as text/csv, as an attachment, opened like every download by `# ` comment lines with the licence and a citation (also in `X-Attribution` and a `Link: rel="license"` header), then the header row. `output=parquet` gives them as a Parquet file (period_start a UTC timestamp in microseconds, counts and expected 64-bit integers, the rest doubles), the licence and citation in its key-value metadata. With `as_of`, the periods are summed from the readings as the archive held them at that instant (the citation, the Parquet metadata and `Memento-Datetime` name it). With `tz` (an IANA zone), buckets are that zone\'s calendar hours, days, weeks (from Monday) and months: `period_start` carries its offset then (2026-03-29T00:00:00+01:00), the day of a clock change has 23 or 25 hours and its `expected` follows, a clock set back gives its repeated hour twice (each with its offset), from_date and to_date are the zone\'s dates, and the answer names `tz`. For a zone whose offset is a whole number of hours over the range, the buckets are summed from the hourly rollup; for the others (India, Nepal, Newfoundland), whose hours and days cut the rollup\'s UTC hours, from the readings, as exact and slower. `percentiles` (from the readings, as percentile_cont) and `min_coverage` (openair\'s data.thresh) apply to every zone. A read after a backfill of the station waits for its rollups\' refresh; when that refresh fails or takes more than 10 s, the last exact answer is given instead, with a `Memento-Datetime` header saying as of when it was exact (without an earlier answer, the refresh is tried again and waited for).',
      query: aggregateQuerySchema(config.defaultStation),
      headers: acceptDatetimeHeader,
      checks: dateRangeErrors,
      responses: {
        200: {
          description: 'The aggregates',
          content: { 'application/json': aggregateSchema, 'text/csv': z.string(), [parquetType]: z.string().openapi({ format: 'binary' }) },
          headers: { 'Memento-Datetime': `${mementoHeader['Memento-Datetime']}; also, without them, on the last exact answer given while a backfill waits for its refresh` },
        },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const request = aggregateRequest(query, stationParam(query.station, config.defaultStation));
      const { stationId, range, dataset } = request;
      const asOf = readAsOf(ctx, query.as_of);
      const qcPass = query.qc === 'pass' ? await qcConfigOf(db.readPool, stationId, asOf?.iso) : undefined;
      const args = request.args(asOf, qcPass, spacings);
      // A range that ends before today (UTC) gets no more live readings: only a late backfill or an override can change it.
      if (query.to_date && query.to_date < new Date().toISOString().slice(0, 10)) ctx.set('Cache-Control', cachePolicy.closedAggregate);
      const cite = citation(config.baseUrl, [stationId], range, dataset, asOf, ctx.querystring);
      // Whole, not streamed: an aggregate is small beside the readings it sums, and a known body can carry an ETag.
      const output = query.output === 'csv' ? aggregateCsvOutput(args, cite)
        : query.output === 'parquet' ? aggregateParquetOutput(args, cite, asOf) : aggregateJsonOutput(args);
      // As of an instant or with qc=pass, summed from the readings each time: never kept.
      const { answer, periods, asOf: exactAsOf } = asOf || qcPass ? await aggregateAsOf(db, args, output) : await readAggregate(args, output);
      if (periods === 0) await requireStation(db.pool, stationId);
      if (exactAsOf) {
        // The last exact answer, given while a backfill of the station waits for its refresh (RFC 7089's header).
        ctx.set('Memento-Datetime', exactAsOf.toUTCString());
        ctx.set('Cache-Control', 'no-cache');
      }
      if (query.output !== 'json') attributeDownload(ctx, downloadFileName([stationId], range, dataset, query.output), cite);
      await answer.send(ctx);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/compare/', operationId: 'compareStations', cache: cachePolicy.live, tag: 'Readings',
      cost: (query, ctx) => readCost(query, ctx),
      summary: 'One metric of up to 10 stations, aligned on common time buckets',
      description: 'interval_seconds is the smallest of 60, 300, 900, 3600, 10800, 21600 and 86400 that gives at most 720 buckets; each value is the mean of the station\'s readings in the bucket (exact decimal sums rounded once, as on /data/aggregate/), null when it has none. The buckets end with the one holding now, or with `as_of` the one holding that instant, the readings as the archive held them then.',
      query: compareQuerySchema,
      headers: acceptDatetimeHeader,
      responses: {
        200: { description: 'The aligned series', content: { 'application/json': compareSchema }, headers: mementoHeader },
        404: { description: 'A station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const asOf = readAsOf(ctx, query.as_of);
      await requireStations(db.pool, query.stations);
      const request = compareRequest(query);
      const compareArgs = request.args(asOf);
      // As of an instant, from the readings (on the primary, settled when the instant is recent): the
      // rollups' refresh is not waited for.
      if (asOf) await asOfPools(db, asOf, query.stations);
      const result = asOf ? await compareStations(db.pool, compareArgs) : await readCurrent(db, () => compareStations(db.pool, compareArgs));
      ctx.body = {
        param: query.param, hours: query.hours, quality: query.quality ?? null, ...(request.tz ? { tz: request.tz } : {}), interval_seconds: request.seconds,
        timestamps: result.timestamps,
        series: Object.fromEntries(query.stations.map((id) => [id, result.series[id] ?? []])),
      };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/profile/', operationId: 'profileReadings', cache: cachePolicy.live, tag: 'Readings',
      cost: (query, ctx) => readCost({}, ctx, Boolean(query.percentiles?.length) || cutsUtcHoursNow(query.tz)),
      summary: 'A metric\'s diurnal, weekly or yearly cycle: its statistics per hour of the day, day of the week or month of the zone\'s calendar',
      description: 'Each slot (by=hour_of_day: 0 to 23; day_of_week: 1 Monday to 7 Sunday; month_of_year: 1 to 12, of the zone `tz`, UTC by default) gives the metric\'s values counted, their mean and sample standard deviation, and with `percentiles` each percentile as `pNN` (percentile_cont over the slot\'s values), over the range (the zone\'s dates) and the quality filter; slots without values are absent. Exact, as on /data/aggregate/: mean and standard deviation from exact decimal sums rounded once, the same to the bit from the hourly rollup for a zone whose offset is a whole number of hours, from the readings otherwise and for percentiles. `output=csv` and `output=parquet` give the same columns as a download does, with the licence and citation.',
      query: profileQuerySchema(config.defaultStation),
      checks: dateRangeErrors,
      responses: {
        200: { description: 'The profile', content: { 'application/json': profileSchema, 'text/csv': z.string(), [parquetType]: z.string().openapi({ format: 'binary' }) } },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const stationId = stationParam(query.station, config.defaultStation);
      await requireStation(db.pool, stationId);
      const tz = query.tz ?? 'UTC';
      const args = { stationId, param: query.param, by: query.by, tz, from: query.from_date, to: query.to_date, quality: query.quality, percentiles: query.percentiles };
      const { rows } = await db.replicas.prefer(({ readPool }) => readCurrent(db, () => readProfile(readPool, args)));
      const range = { from: query.from_date, to: query.to_date };
      const dataset = { kind: 'profile', by: query.by, param: query.param, tz } as const;
      const cite = citation(config.baseUrl, [stationId], range, dataset, undefined, ctx.querystring);
      if (query.output === 'json') {
        ctx.body = { station: stationId, param: query.param, by: query.by, tz, results: rows.map((row) => profileResult(row, query.percentiles)) };
        return;
      }
      attributeDownload(ctx, downloadFileName([stationId], range, dataset, query.output), cite);
      if (query.output === 'csv') {
        ctx.type = 'text/csv; charset=utf-8';
        ctx.body = profileCsv(rows, preamble(cite, profileColumns(query.percentiles)));
      } else {
        ctx.type = parquetType;
        ctx.body = profileParquet(rows, query.percentiles ?? [], parquetMetadata(cite, undefined, tz));
      }
    },
  );
}
