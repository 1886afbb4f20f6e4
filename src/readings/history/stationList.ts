import { featureCollectionSchema, shapeFeatureCollection } from '../../formats/geojson.js';
import { addRoute, type Api } from '../../http/route.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { z } from '../../http/zod.js';
import { stationRow } from '../../stations/queries.js';
import { stationStatuses } from '../../stations/schema.js';
import { listStationsWithLatest, type StationWithLatestRow } from './queries.js';
import { readingSchema, shapeReading } from '../reading.js';

// The station list carries each station's latest reading, so it lives with the readings, which know
// stations, rather than with the stations, which would then have to know readings.

export const stationSchema = stationRow
  .extend({
    status: z.enum(stationStatuses),
    interval_seconds: z.number().int().openapi({ description: 'Seconds between two readings of the station: what the aggregates\' coverage expects' }),
    last_seen: z.string().datetime().nullable(),
    latest_reading: readingSchema.nullable(),
    latest: readingSchema.nullable().openapi({ description: 'The same object as latest_reading, kept for older clients.' }),
  })
  .openapi('Station');
export type Station = z.infer<typeof stationSchema>;

const stationListSchema = z.object({ count: z.number().int(), stations: z.array(stationSchema) }).openapi('StationList');

export const stationsQuerySchema = z.object({
  output: z.enum(['json', 'geojson']).default('json'),
});

export function shapeStation(row: StationWithLatestRow): Station {
  const latest = row.latest ? shapeReading(row.latest) : null;
  return {
    station_id: row.station_id,
    name: row.name,
    location_name: row.location_name,
    altitude_m: row.altitude_m,
    latitude: row.latitude,
    longitude: row.longitude,
    status: row.status as Station['status'],
    interval_seconds: row.interval_seconds,
    last_seen: latest?.timestamp ?? null,
    latest_reading: latest,
    latest,
  };
}

export function addStationListRoute(api: Api): void {
  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/stations/',
      operationId: 'listStations', cache: cachePolicy.stations,
      summary: 'All stations with their latest reading',
      description: 'JSON by default; `output=geojson` gives an RFC 7946 FeatureCollection (application/geo+json).',
      tag: 'Stations',
      query: stationsQuerySchema,
      responses: {
        200: {
          description: 'The stations',
          content: { 'application/json': stationListSchema, 'application/geo+json': featureCollectionSchema },
        },
      },
    },
    async (ctx, { query }) => {
      const stations = (await listStationsWithLatest(api.deps.db.readPool)).map(shapeStation);
      if (query.output === 'geojson') {
        ctx.type = 'application/geo+json';
        ctx.body = shapeFeatureCollection(stations, (s) => s.station_id);
        return;
      }
      ctx.body = { count: stations.length, stations };
    },
  );
}
