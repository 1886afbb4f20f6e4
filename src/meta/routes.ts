import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { addRoute, listRoutes, type Api } from '../http/route.js';
import { cachePolicy } from '../http/cachePolicy.js';
import { EncodedAnswer, fixedAnswer } from '../http/encodedAnswer.js';
import { compressOnce } from '../http/middleware/compression.js';
import { notFound } from '../http/problem.js';
import { z } from '../http/zod.js';
import { checkHealth, healthSchema } from './health.js';
import { docsPage } from './docsPage.js';
import { changelogSchema, loadChangelog } from './changelog.js';
import { readStats, shapeStats, type ReadingTotals } from './stats.js';

// The package's main module loads the whole 1 MB bundle; only its directory is needed.
const swaggerDir: string = createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js')();

// The docs page is served from these files of the swagger-ui-dist package only: no CDN, no other file.
// A Map, not an object literal: a request for 'constructor' or '__proto__' must find nothing.
const docsAssets = new Map([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
]);

type Asset = { answer: EncodedAnswer; modified: Date };
const loadedAssets = new Map<string, Asset>();

/** A docs asset, read once and kept with its tag and compressed forms (a release never changes it); undefined for any other name. */
function docsAsset(file: string): Asset | undefined {
  const type = docsAssets.get(file);
  if (!type) return undefined;
  let asset = loadedAssets.get(file);
  if (!asset) {
    const where = path.join(swaggerDir, file);
    asset = { answer: new EncodedAnswer(readFileSync(where), type, compressOnce), modified: statSync(where).mtime };
    loadedAssets.set(file, asset);
  }
  return asset;
}

const discoverySchema = z
  .object({
    api: z.string(),
    version: z.string(),
    base_url: z.string().url(),
    cors: z.string(),
    license: z.string(),
    documentation: z.object({ openapi: z.string().url(), html: z.string().url() }),
    endpoints: z.record(z.object({ method: z.string(), url: z.string(), description: z.string() })),
  })
  .openapi('Discovery');

export function addMetaRoutes(api: Api): void {
  const { config, db } = api.deps;
  // The reading totals last summed, given again while no station's readings have changed since.
  let readingTotals: ReadingTotals | null = null;

  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/',
      operationId: 'discover', cache: cachePolicy.release,
      summary: 'Discovery: what this API offers and where',
      tag: 'Meta',
      responses: { 200: { description: 'The discovery document', content: { 'application/json': discoverySchema } } },
    },
    // Made on the first request, when every route is registered.
    async (ctx) => discovery().send(ctx),
  );
  const discovery = fixedAnswer(() => ({
    api: 'envmon: Environmental Monitoring and Research Content API',
    version: 'v1',
    base_url: config.baseUrl,
    cors: 'Access-Control-Allow-Origin: * on every read endpoint',
    license: 'CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/)',
    documentation: { openapi: `${config.baseUrl}/openapi.json`, html: `${config.baseUrl}/docs/` },
    endpoints: Object.fromEntries(
      listRoutes(api).map((route) => [
        `${route.method} ${route.path}`,
        { method: route.method, url: `${config.publicUrl}${route.path}`, description: route.summary },
      ]),
    ),
  }));

  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/health/',
      operationId: 'health',
      summary: 'Health for uptime monitors: ok when a station posted within 90 minutes',
      tag: 'Meta',
      responses: {
        200: { description: 'The database answers', content: { 'application/json': healthSchema } },
        503: { description: 'The database does not answer; the body still carries ok: false' },
      },
    },
    async (ctx) => {
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await checkHealth(db.pool, db.replicas.status());
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/stats/', operationId: 'stats', cache: cachePolicy.live, tag: 'Meta',
      summary: 'Counts of stations, readings (from the rollups) and content',
      responses: { 200: { description: 'The counts', content: { 'application/json': z.record(z.unknown()) } } },
    },
    async (ctx) => {
      // Never waits for a refresh: a station whose backfill is not yet in its rollups is counted from its readings.
      const { row, totals } = await readStats(db.readPool, readingTotals);
      readingTotals = totals;
      ctx.body = shapeStats(row);
    },
  );

  // Read at start: a changelog that does not parse stops the service there.
  const releases = loadChangelog();
  const changelog = fixedAnswer(() => releases);
  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/changelog/', operationId: 'changelog', cache: cachePolicy.release, tag: 'Meta',
      summary: 'The changes of each release, newest first',
      responses: { 200: { description: 'The changelog', content: { 'application/json': changelogSchema } } },
    },
    async (ctx) => changelog().send(ctx),
  );

  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/openapi.json',
      operationId: 'openapi', cache: cachePolicy.release,
      summary: 'This OpenAPI 3.1 document',
      tag: 'Meta',
      responses: { 200: { description: 'The OpenAPI document', content: { 'application/json': z.record(z.unknown()) } } },
    },
    async (ctx) => openapi().send(ctx),
  );

  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/docs/',
      operationId: 'docs', cache: cachePolicy.release,
      summary: 'Human-readable API documentation rendered from the OpenAPI document',
      tag: 'Meta',
      responses: { 200: { description: 'An HTML page', content: { 'text/html': z.string() } } },
    },
    async (ctx) => {
      // "Try it out" calls the address the page was read from ('self'), or the public address when chosen.
      ctx.set('Content-Security-Policy', `default-src 'self'; connect-src 'self' ${new URL(config.publicUrl).origin}; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'`);
      await page().send(ctx);
    },
  );
  const openapi = fixedAnswer(() => api.document());
  const page = fixedAnswer(docsPage, 'text/html; charset=utf-8');

  addRoute(
    api,
    {
      method: 'get',
      path: '/api/v1/docs/assets/:file',
      operationId: 'docsAsset',
      summary: 'Static assets of the documentation page',
      tag: 'Meta',
      params: z.object({ file: z.string() }),
      cache: 'public, max-age=86400',
      responses: { 200: { description: 'A stylesheet or script' }, 404: { description: 'No such asset' } },
    },
    async (ctx, { params }) => {
      if (params.file === 'docs.js') {
        ctx.type = 'text/javascript; charset=utf-8';
        ctx.body = docsScript;
        return;
      }
      const asset = docsAsset(params.file);
      if (!asset) throw notFound(`no documentation asset named '${params.file}'`);
      ctx.lastModified = asset.modified;
      await asset.answer.send(ctx);
    },
  );
}

const docsScript = `window.addEventListener('load', function () {
  window.SwaggerUIBundle({ url: '../openapi.json', dom_id: '#docs', deepLinking: true });
});
`;
