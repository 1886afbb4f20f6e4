import cors from '@koa/cors';
import Koa, { type Context } from 'koa';
import { addContentRoutes } from './content/routes.js';
import { widgetProblemRenderer } from './embed/errorPage.js';
import { addEmbedRoutes } from './embed/routes.js';
import { addMetaRoutes } from './meta/routes.js';
import { addIngestRoutes } from './readings/ingest/routes.js';
import { createLiveReadings, type LiveReadings } from './readings/live/feed.js';
import { addLiveRoutes } from './readings/live/routes.js';
import { addAggregateRoutes } from './readings/aggregates/routes.js';
import { addExportRoutes } from './readings/export/routes.js';
import { addQualityRoutes } from './readings/quality/routes.js';
import { addHistoryRoutes } from './readings/history/routes.js';
import { SeriesSpacings } from './readings/core/qc/spacings.js';
import { addArchiveRoutes } from './readings/archive/routes.js';
import { snapshotSources } from './snapshotSources.js';
import { addStationListRoute } from './readings/history/stationList.js';
import type { Deps } from './http/deps.js';
import { answerEscapedErrors } from './http/escapedErrors.js';
import { compression, identityWhenNothingAccepted } from './http/middleware/compression.js';
import { conditionalGet, etagPerEncoding } from './http/middleware/etags.js';
import { problems } from './http/middleware/problems.js';
import { rateLimit } from './http/middleware/rateLimit.js';
import { requestContext } from './http/middleware/requestContext.js';
import { securityHeaders } from './http/middleware/securityHeaders.js';
import { methodNotAllowed, notFound } from './http/problem.js';
import { createApi, isStationOperation, type Api } from './http/route.js';

const ingestPrefix = '/api/v1/ingest/';

/**
 * The whole HTTP application for the given dependencies; it holds no state of its own beyond them but the
 * live streams' subscriptions, which `live.close()` ends (before the server drains).
 */
export function createApp(deps: Deps): { app: Koa; api: Api; live: LiveReadings } {
  // Behind proxies that append to X-Forwarded-For, the client is the entry the outermost trusted one added:
  // Koa takes the leftmost of the last `maxIpsCount` entries; anything further left the client wrote.
  const hops = deps.config.trustProxyHops;
  const app = new Koa({ proxy: hops > 0, maxIpsCount: hops });
  const api = createApi(deps);
  // New readings for live streams: listens on the database while anyone subscribes.
  const live = createLiveReadings(deps.db, deps.log);
  addMetaRoutes(api);
  addStationListRoute(api);
  // The stations' series facts the QARTOD flags take, kept between the reads that flag.
  const spacings = new SeriesSpacings();
  addHistoryRoutes(api, spacings);
  addAggregateRoutes(api, spacings);
  addExportRoutes(api, spacings);
  addQualityRoutes(api, spacings);
  addArchiveRoutes(api, snapshotSources(deps.config.defaultStation));
  addLiveRoutes(api, live);
  addIngestRoutes(api);
  addContentRoutes(api);
  addEmbedRoutes(api);

  app.use(requestContext(deps.log));
  app.use(securityHeaders());
  // Every read route (errors included) may be called from any origin; the ingest route does not advertise CORS.
  app.use(
    cors({
      origin: (ctx) => (ctx.path.startsWith(ingestPrefix) ? '' : '*'),
      allowMethods: ['GET', 'HEAD', 'OPTIONS'],
      exposeHeaders: ['ETag', 'Link', 'Content-Disposition', 'X-Attribution', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'X-Request-Id'],
      maxAge: 86400,
    }),
  );
  // Outermost first: the ETag names the encoding compression chose; compression sees the identity bytes the
  // conditional GET tagged; the tag is computed over JSON the problems middleware has already serialised.
  app.use(identityWhenNothingAccepted());
  app.use(etagPerEncoding());
  app.use(compression());
  app.use(conditionalGet());
  app.use(problems(deps.log, [widgetProblemRenderer]));
  // Every request is a public one but a station's own (ingest, with its key) and a CORS preflight: reads,
  // a snapshot's making, and requests for no route at all, which a flood would otherwise send for free.
  const counted = (ctx: Context) => ctx.method !== 'OPTIONS' && !isStationOperation(api, ctx);
  app.use(rateLimit(deps.config.rateLimitPerMinute, deps.log, counted, deps.redis));
  app.use(api.router.routes());
  app.use(async (ctx) => {
    const matched = api.router.match(ctx.path, ctx.method);
    if (matched.path.length > 0) {
      const allowed = [...new Set(matched.path.flatMap((layer) => layer.methods))];
      throw methodNotAllowed(ctx.method, ctx.path, allowed);
    }
    // Paths end in a slash; a GET that only lacks it is redirected rather than refused.
    if (!ctx.path.endsWith('/') && api.router.match(`${ctx.path}/`, ctx.method).route) {
      ctx.status = 308;
      ctx.redirect(`${ctx.path}/${ctx.querystring ? `?${ctx.querystring}` : ''}`);
      return;
    }
    throw notFound(`no resource at ${ctx.path}; see ${deps.config.baseUrl}/ for the endpoints`);
  });
  // Errors after a response has started (a download whose client went away) reach Koa's 'error' event,
  // whose default handler prints to stderr: log them instead, quietly when the client simply left.
  app.silent = true;
  answerEscapedErrors(app);
  app.on('error', (error: { code?: string }, ctx?: { state?: { requestId?: string } }) => {
    const gone = error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET' || error.code === 'EPIPE';
    deps.log[gone ? 'debug' : 'error']({ err: error, req_id: ctx?.state?.requestId }, gone ? 'client went away' : 'response failed');
  });
  return { app, api, live };
}
