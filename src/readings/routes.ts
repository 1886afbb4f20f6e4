import { coalesce } from '../db/coalesce.js';
import { readCurrent } from '../db/rollupsCurrent.js';
import { addRoute, type Api } from '../http/route.js';
import { cachePolicy } from '../http/cachePolicy.js';
import { notFound } from '../http/problem.js';
import { clientSlots, guardStream } from '../http/streamGuard.js';
import { z } from '../http/zod.js';
import { createAggregateReader } from './aggregateCache.js';
import { aggregateCsvOutput, aggregateJsonOutput, aggregateParquetOutput } from './aggregateOutputs.js';
import { parquetType } from '../http/parquetFile.js';
import { attributeDownload, citation, downloadFileName, parquetMetadata, preamble } from './attribution.js';
import { downloadColumns, streamDownload, streamParquetDownload } from './download.js';
import { compareInterval, compareStations, findLatestReading } from './queries.js';
import { streamHistorical } from './historical.js';
import {
  aggregateQuerySchema,
  compareQuerySchema,
  dateRangeErrors,
  downloadErrors,
  downloadQuerySchema,
  historicalQuerySchema,
  latestQuerySchema,
  maxDownloadStations,
} from './schema.js';
import { aggregateResultSchema } from './shape.js';
import { readingSchema, shapeReading } from './reading.js';
import { requireStation, requireStations, stationParam } from './stationScope.js';

const historicalSchema = z
  .object({ station: z.string(), hours: z.number().int(), count: z.number().int(), readings: z.array(readingSchema) })
  .openapi('HistoricalReadings');

const aggregateSchema = z
  .object({ station: z.string(), period: z.string(), count: z.number().int(), results: z.array(aggregateResultSchema) })
  .openapi('Aggregate');

const compareSchema = z
  .object({
    param: z.string(),
    hours: z.number().int(),
    quality: z.string().nullable(),
    interval_seconds: z.number().int(),
    timestamps: z.array(z.string().datetime()),
    series: z.record(z.array(z.number().nullable())),
  })
  .openapi('Comparison');

export function addReadingRoutes(api: Api): void {
  const { config, db } = api.deps;
  const claimDownloadSlot = clientSlots(config.downloadsPerClient, `at most ${config.downloadsPerClient} downloads at a time per client; wait for one to finish`);
  // Partners' charts ask for the same stations' latest readings over and over, many at once.
  const latestReading = coalesce((stationId: string) => findLatestReading(db.readPool, stationId));
  const readAggregate = createAggregateReader(db, config.aggregateCacheMb * 1024 * 1024);

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/latest/', operationId: 'latestReading', cache: cachePolicy.live, tag: 'Readings',
      summary: 'The most recent reading of a station',
      query: latestQuerySchema,
      responses: {
        200: { description: 'The reading', content: { 'application/json': readingSchema } },
        404: { description: 'The station is unknown or has no reading' },
      },
    },
    async (ctx, { query }) => {
      const stationId = stationParam(query.station, undefined);
      const reading = await latestReading(stationId);
      if (!reading) {
        await requireStation(db.pool, stationId);
        throw notFound(`station '${stationId}' has no readings yet`);
      }
      ctx.body = shapeReading(reading);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/historical/', operationId: 'historicalReadings', cache: cachePolicy.live, tag: 'Readings',
      summary: 'A station\'s readings over the last hours, oldest first',
      query: historicalQuerySchema(config.defaultStation),
      responses: {
        200: { description: 'The readings', content: { 'application/json': historicalSchema } },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const stationId = stationParam(query.station, config.defaultStation);
      // Checked before the first byte: once the answer streams, the status cannot change.
      await requireStation(db.pool, stationId);
      const body = await db.replicas.prefer(({ streamPool }) => streamHistorical(streamPool, { stationId, hours: query.hours, quality: query.quality }));
      ctx.type = 'application/json; charset=utf-8';
      guardStream(ctx, body, { deadlineMs: config.downloadTimeoutMs, stallMs: config.streamStallMs });
      ctx.body = body;
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/aggregate/', operationId: 'aggregateReadings', cache: cachePolicy.live, tag: 'Readings',
      summary: 'Count, mean, min, max, standard deviation and coverage of the metrics per hour, day, week or month',
      description: 'Exact: the numbers a GROUP BY over the raw readings gives (avg, min, max, stddev_samp, count), read from the rollups. Weeks start Monday 00:00 UTC, months on the 1st; buckets without readings are absent. Without `metrics` each result has the fields api.md lists, then the standard deviation of each metric it gives a mean of, `expected` and `coverage_pct`; with `metrics` it has, per metric named, `<metric>_count`, `_mean`, `_min`, `_max` and `_sd`, then `expected` and `coverage_pct`. `expected` is the readings the station\'s `interval_seconds` implies for the part of the bucket inside the range (rounded up); `coverage_pct` is `count` against it. `output=csv` gives the same columns as text/csv, as an attachment, opened like every download by `# ` comment lines with the licence and a citation (also in `X-Attribution` and a `Link: rel="license"` header), then the header row. `output=parquet` gives them as a Parquet file (period_start a UTC timestamp in microseconds, counts and expected 64-bit integers, the rest doubles), the licence and citation in its key-value metadata. A read after a backfill of the station waits for its rollups\' refresh; when that refresh fails or takes more than 10 s, the last exact answer is given instead, with a `Memento-Datetime` header saying as of when it was exact (without an earlier answer, the refresh is tried again and waited for).',
      query: aggregateQuerySchema(config.defaultStation),
      checks: dateRangeErrors,
      responses: {
        200: {
          description: 'The aggregates',
          content: { 'application/json': aggregateSchema, 'text/csv': z.string(), [parquetType]: z.string().openapi({ format: 'binary' }) },
        },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const stationId = stationParam(query.station, config.defaultStation);
      const args = { stationId, period: query.period, from: query.from_date, to: query.to_date, quality: query.quality, metrics: query.metrics };
      // A range that ends before today (UTC) gets no more live readings: only a late backfill or an override can change it.
      if (query.to_date && query.to_date < new Date().toISOString().slice(0, 10)) ctx.set('Cache-Control', cachePolicy.closedAggregate);
      const range = { from: query.from_date, to: query.to_date };
      const dataset = { kind: 'aggregate', period: query.period } as const;
      const cite = citation(config.baseUrl, [stationId], range, dataset);
      // Whole, not streamed: an aggregate is small beside the readings it sums, and a known body can carry an ETag.
      const output = query.output === 'csv' ? aggregateCsvOutput(args, cite)
        : query.output === 'parquet' ? aggregateParquetOutput(args, cite) : aggregateJsonOutput(args);
      const { answer, periods, asOf } = await readAggregate(args, output);
      if (periods === 0) await requireStation(db.pool, stationId);
      if (asOf) {
        // The last exact answer, given while a backfill of the station waits for its refresh (RFC 7089's header).
        ctx.set('Memento-Datetime', asOf.toUTCString());
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
      summary: 'One metric of up to 10 stations, aligned on common time buckets',
      description: 'interval_seconds is the smallest of 60, 300, 900, 3600, 10800, 21600 and 86400 that gives at most 720 buckets; each value is the mean of the station\'s readings in the bucket, null when it has none.',
      query: compareQuerySchema,
      responses: {
        200: { description: 'The aligned series', content: { 'application/json': compareSchema } },
        404: { description: 'A station is unknown' },
      },
    },
    async (ctx, { query }) => {
      await requireStations(db.pool, query.stations);
      const seconds = compareInterval(query.hours);
      const result = await readCurrent(db, () => compareStations(db.pool, {
        stationIds: query.stations, param: query.param, hours: query.hours, seconds, quality: query.quality,
      }));
      ctx.body = {
        param: query.param, hours: query.hours, quality: query.quality ?? null, interval_seconds: seconds,
        timestamps: result.timestamps,
        series: Object.fromEntries(query.stations.map((id) => [id, result.series[id] ?? []])),
      };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/download/', operationId: 'downloadReadings', cache: cachePolicy.download, tag: 'Readings',
      summary: 'Full history as CSV or Parquet, streamed, with licence and citation',
      description: `One station (\`station\`) or several (\`stations\`, at most ${maxDownloadStations}, with station_id as first column, sorted by timestamp): one of the two is required${config.defaultStation ? ` unless DEFAULT_STATION (${config.defaultStation}) stands for station` : ''}, and giving both is a 400. Dates are inclusive whole UTC days.`,
      query: downloadQuerySchema(config.defaultStation),
      checks: downloadErrors,
      responses: {
        200: {
          description: 'CSV: comment lines with licence and citation, a header row, then the readings; or (output=parquet) a Parquet file of the same columns, the licence and citation in its key-value metadata',
          content: { 'text/csv': z.string(), [parquetType]: z.string().openapi({ format: 'binary' }) },
        },
        404: { description: 'A station is unknown' },
        429: { description: 'This client already has DOWNLOADS_PER_CLIENT (2) downloads open' },
      },
    },
    async (ctx, { query }) => {
      // Checked before the first byte: once the CSV streams, the status cannot change.
      const stationIds = query.stations ?? [stationParam(query.station, config.defaultStation)];
      await requireStations(db.pool, stationIds);
      claimDownloadSlot(ctx);
      const range = { from: query.from_date, to: query.to_date };
      const cite = citation(config.baseUrl, stationIds, range);
      const args = { stationIds, ...range, quality: query.quality, withStation: Boolean(query.stations) };
      const body = await db.replicas.prefer(({ streamPool }) => query.output === 'parquet'
        ? streamParquetDownload(streamPool, args, parquetMetadata(cite))
        : streamDownload(streamPool, args, preamble(cite, [...(query.stations ? ['station_id'] : []), ...downloadColumns])));
      ctx.type = query.output === 'parquet' ? parquetType : 'text/csv; charset=utf-8';
      attributeDownload(ctx, downloadFileName(stationIds, range, { kind: 'readings' }, query.output), cite);
      guardStream(ctx, body, { deadlineMs: config.downloadTimeoutMs, stallMs: config.streamStallMs });
      ctx.body = body;
    },
  );
}
