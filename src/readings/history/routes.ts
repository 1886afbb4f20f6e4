import { coalesce } from '../../db/coalesce.js';
import { addRoute, type Api } from '../../http/route.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { notFound } from '../../http/problem.js';
import { guardStream } from '../../http/streamGuard.js';
import { z } from '../../http/zod.js';
import { acceptDatetimeHeader, asOfPools, mementoHeader, readAsOf, readAsOfOn } from '../core/asOf.js';
import { requireStation, stationParam } from '../core/scope.js';
import { qcConfigOf } from '../core/qc/config.js';
import { numericFields, readingSchema, shapeReading } from '../reading.js';
import { qcFlagSchema } from '../core/qc/schema.js';
import { qcTests } from '../core/qc/config.js';
import { streamHistorical } from './historical.js';
import { findLatestReading } from './queries.js';
import { historicalQuerySchema } from '../core/params.js';
import { latestQuerySchema } from './schema.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { readCost } from '../core/cost.js';

const testFlags = z.object(Object.fromEntries(qcTests.map((t) => [t, qcFlagSchema.optional()])));
const flaggedReadingSchema = readingSchema.extend({
  ...Object.fromEntries(numericFields.map((f) => [`${f}_qc`, qcFlagSchema.optional().openapi({ description: `With qc=true: ${f}'s aggregate QARTOD flag` })])),
  qc: z.record(z.enum(numericFields), testFlags).optional().openapi({ description: 'With qc=true: per tested field, each test\'s flag' }),
}).openapi('FlaggedReading');
const historicalSchema = z
  .object({ station: z.string(), hours: z.number().int(), count: z.number().int(), readings: z.array(flaggedReadingSchema) })
  .openapi('HistoricalReadings');

/** /data/latest/ and /data/historical/: a station's newest reading, and its readings over the last hours. */
export function addHistoryRoutes(api: Api, spacings: SeriesSpacings): void {
  const { config, db } = api.deps;
  // Partners' charts ask for the same stations' latest readings over and over, many at once.
  const latestReading = coalesce((stationId: string) => findLatestReading(db.readPool, stationId));

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
      // Flagged, or longer than a day: read in proportion to the window, up to a month of readings.
      cost: (query, ctx) => readCost(query, ctx, query.qc === true || query.hours > 24),
      summary: 'A station\'s readings over the last hours, oldest first',
      description: 'With `as_of`, the hours before that instant, as the archive held them then.',
      query: historicalQuerySchema(config.defaultStation),
      headers: acceptDatetimeHeader,
      responses: {
        200: { description: 'The readings', content: { 'application/json': historicalSchema }, headers: mementoHeader },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const stationId = stationParam(query.station, config.defaultStation);
      const asOf = readAsOf(ctx, query.as_of);
      // Checked before the first byte: once the answer streams, the status cannot change.
      await requireStation(db.pool, stationId);
      const pools = await asOfPools(db, asOf, [stationId]);
      const qc = query.qc ? await qcConfigOf(db.readPool, stationId, asOf?.iso) : undefined;
      const body = await readAsOfOn(db, pools, ({ streamPool }) => streamHistorical(streamPool, { stationId, hours: query.hours, quality: query.quality, asOf, qc, spacings }));
      ctx.type = 'application/json; charset=utf-8';
      guardStream(ctx, body, { deadlineMs: config.downloadTimeoutMs, stallMs: config.streamStallMs });
      ctx.body = body;
    },
  );
}
