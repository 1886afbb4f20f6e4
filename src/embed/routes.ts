import { randomBytes } from 'node:crypto';
import { addRoute, problemSchema, type Api } from '../http/route.js';
import { notFound } from '../http/problem.js';
import { z } from '../http/zod.js';
import { findStation } from '../stations/queries.js';
import { widgetPolicy } from './errorPage.js';
import { widgetPage } from './page.js';
import { widgetPathSchema, widgetQuerySchema } from './schema.js';

export function addEmbedRoutes(api: Api): void {
  const { db } = api.deps;
  addRoute(
    api,
    {
      method: 'get', path: '/embed/station/:station_id/', operationId: 'stationWidget', tag: 'Embed',
      summary: 'Self-contained live chart of a station, for an iframe',
      description: 'Draws the mean of the ok readings per bucket over the last `hours` (suspect and invalid readings are left out) and refreshes every 60 seconds. Framing is allowed from any site.',
      params: widgetPathSchema,
      query: widgetQuerySchema,
      responses: {
        200: { description: 'An HTML page', content: { 'text/html': z.string() } },
        400: { description: 'A parameter is wrong: a small page in the widget\'s style saying which (a problem document when the client asks for JSON)', content: { 'text/html': z.string(), 'application/problem+json': problemSchema } },
        404: { description: 'The station is unknown: a small page in the widget\'s style (a problem document when the client asks for JSON)', content: { 'text/html': z.string(), 'application/problem+json': problemSchema } },
      },
    },
    async (ctx, { params, query }) => {
      const station = await findStation(db.pool, params.station_id);
      if (!station) throw notFound(`station '${params.station_id}' is unknown`);
      const nonce = randomBytes(16).toString('base64');
      ctx.set('Content-Security-Policy', widgetPolicy(nonce));
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = widgetPage({ stationId: station.station_id, stationName: station.name, query, nonce });
    },
  );
}
