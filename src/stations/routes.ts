import { addRoute, type Api } from '../http/route.js';
import { listStationsWithLatest } from './queries.js';
import { stationsQuerySchema } from './schema.js';
import { featureCollectionSchema, shapeFeatureCollection, shapeStation, stationListSchema } from './shape.js';

export function addStationRoutes(api: Api): void {
  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/stations/',
      operationId: 'listStations',
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
      const stations = (await listStationsWithLatest(api.deps.db.pool)).map(shapeStation);
      if (query.output === 'geojson') {
        ctx.type = 'application/geo+json';
        ctx.body = shapeFeatureCollection(stations, (s) => s.station_id);
        return;
      }
      ctx.body = { count: stations.length, stations };
    },
  );
}
