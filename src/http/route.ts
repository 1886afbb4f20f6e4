import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from './zod.js';
import type { Deps } from './deps.js';
import { invalidParameters, type ParamError } from './problem.js';
import { classifyDatabaseError } from '../db/errors.js';
import { parseInput } from './validate.js';
import { createCostSlots, type CostClass, type CostSlots } from './costSlots.js';

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ param: z.string(), message: z.string() })).optional(),
  })
  .openapi('Problem');

type AnyObject = z.AnyZodObject;

/** A response's headers a client reads, by name, each with what it says. */
type ResponseHeaders = Record<string, string>;
type Responses = Record<number, { description: string; content?: Record<string, z.ZodTypeAny>; headers?: ResponseHeaders }>;

export type RouteSpec<Q extends AnyObject, P extends AnyObject> = {
  method: 'get' | 'post';
  /** Koa path with `:name` parameters, below the site root (`/api/v1/...` for API routes). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  query?: Q;
  /** Request headers the operation reads, for the document alone (the handler reads them itself). */
  headers?: AnyObject;
  /** Rules across query parameters, checked after the schema; their errors join the same 400. */
  checks?: (query: z.infer<Q>) => ParamError[];
  params?: P;
  /** The request body: its schema per media type. */
  body?: { content: Record<string, z.ZodTypeAny>; description: string };
  security?: boolean;
  /** Cache-Control of a successful answer (errors carry none); a handler may set another. */
  cache?: string;
  /** What an answer to the query costs (costSlots.ts): cheap when absent. A computed one holds a slot while it is answered. */
  cost?: (query: z.infer<Q>, ctx: Context) => CostClass;
  responses: Responses;
};

export type RouteInput<Q extends AnyObject, P extends AnyObject> = { query: z.infer<Q>; params: z.infer<P> };

/** The router and the OpenAPI registry, which only ever grow together through `addRoute`. */
export type Api = {
  deps: Deps;
  router: Router;
  registry: OpenAPIRegistry;
  document: () => object;
  /** The operations a station calls with its key (`security`), by operationId: what the read rate limit never counts. */
  stationOperations: Set<string>;
  /** The slots of the requests that cost more than a cheap read. */
  costSlots: CostSlots;
};

export function createApi(deps: Deps): Api {
  const registry = new OpenAPIRegistry();
  registry.register('Problem', problemSchema);
  registry.registerComponent('securitySchemes', 'stationToken', {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: 'A station API key as `Token <key>`, issued with `envmon keys issue STATION_ID`.',
  });
  let cached: object | undefined;
  return {
    deps,
    // Paths match as written, case and trailing slash included: a path in another case is no route, so
    // that nothing decided from the matched route (the rate limit, CORS, a cost) can be passed by
    // spelling a route otherwise.
    router: new Router({ strict: true, sensitive: true }),
    stationOperations: new Set(),
    costSlots: createCostSlots({
      computed: { ...deps.config.computedReads, what: 'computed reads', examples: 'percentiles, qc=pass, as_of, a zone that cuts UTC hours, profiles, quality reports' },
      snapshot: { perClient: deps.config.downloadsPerClient, total: deps.config.snapshotsAtOnce, waitMs: deps.config.computedReads.waitMs, what: 'snapshots made or compared' },
    }),
    registry,
    document: () => {
      cached ??= new OpenApiGeneratorV31(registry.definitions).generateDocument({
        openapi: '3.1.0',
        info: {
          title: 'envmon: Environmental Monitoring and Research Content API',
          version: 'v1',
          description: 'Readings from field monitoring stations, and the research organisation\'s content. Data licensed CC BY 4.0.',
          license: { name: 'CC BY 4.0', url: 'https://creativecommons.org/licenses/by/4.0/' },
        },
        // Relative first: the docs page's "Try it out" then calls the address the page was read from
        // (127.0.0.1, localhost or a proxy's name), which its CSP allows; the public address for clients
        // generated from a saved copy of the document.
        servers: [
          { url: '/', description: 'The address this document was read from' },
          ...(deps.config.publicUrl ? [{ url: deps.config.publicUrl, description: 'The public address (PUBLIC_URL)' }] : []),
        ],
      });
      return cached;
    },
  };
}

const problemContent = { 'application/problem+json': { schema: problemSchema } };

/**
 * Adds a route to the router and its description to the OpenAPI document, so that no route exists
 * without documentation. Query and path parameters are parsed with the route's schemas before the
 * handler runs; a failure is one 400 problem naming every wrong parameter.
 */
export function addRoute<Q extends AnyObject = AnyObject, P extends AnyObject = AnyObject>(
  api: Api,
  spec: RouteSpec<Q, P>,
  handler: (ctx: Context, input: RouteInput<Q, P>) => Promise<void> | void,
): void {
  const responses: RouteConfig['responses'] = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.content
        ? { content: Object.fromEntries(Object.entries(response.content).map(([type, schema]) => [type, { schema }])) }
        : Number(status) >= 400
          ? { content: problemContent }
          : {}),
      ...(response.headers
        ? { headers: Object.fromEntries(Object.entries(response.headers).map(([name, description]) => [name, { description, schema: { type: 'string' as const } }])) }
        : {}),
    };
  }
  // A route with a cost may refuse a computed read: the client over its share, or a service whose slots are all taken.
  if (spec.cost) {
    responses['429'] ??= {
      description: 'This client already has COMPUTED_PER_CLIENT computed reads (percentiles, qc=pass, as_of, a zone that cuts UTC hours, '
        + 'profiles from the readings, quality reports, historical windows longer than a day) being answered; `Retry-After` says when to try again',
      content: problemContent,
    };
    responses['503'] ??= {
      description: 'Every one of the COMPUTED_READS slots for computed reads stayed taken for COMPUTED_WAIT_MS; `Retry-After` says when to try again',
      content: problemContent,
    };
  }
  if ((spec.query || spec.params) && !responses['400']) {
    responses['400'] = { description: 'A parameter is missing or malformed', content: problemContent };
  }
  responses['default'] = { description: 'An error, as RFC 9457 problem details', content: problemContent };

  api.registry.registerPath({
    method: spec.method,
    path: spec.path.replace(/:(\w+)/g, '{$1}'),
    operationId: spec.operationId,
    summary: spec.summary,
    description: spec.description,
    tags: [spec.tag],
    request: {
      ...(spec.query ? { query: spec.query } : {}),
      ...(spec.headers ? { headers: spec.headers } : {}),
      ...(spec.params ? { params: spec.params } : {}),
      ...(spec.body
        ? { body: { description: spec.body.description, required: true, content: Object.fromEntries(Object.entries(spec.body.content).map(([type, schema]) => [type, { schema }])) } }
        : {}),
    },
    // A public operation says so (no key), rather than leaving a reader to guess.
    security: spec.security ? [{ stationToken: [] }] : [],
    responses,
  });

  if (spec.security) api.stationOperations.add(spec.operationId);
  api.router[spec.method](spec.operationId, spec.path, async (ctx) => {
    refuseNul(ctx.query);
    refuseNul(ctx.params);
    const query = spec.query ? parseInput(spec.query, ctx.query) : {};
    const crossErrors = spec.checks?.(query) ?? [];
    if (crossErrors.length > 0) throw invalidParameters(crossErrors);
    const params = spec.params ? parseInput(spec.params, ctx.params) : {};
    const input = { query, params } as RouteInput<Q, P>;
    // Its slot once the query is known to be well-formed, before any work.
    await api.costSlots(ctx, spec.cost?.(query, ctx) ?? 'cheap');
    if (spec.cache) ctx.set('Cache-Control', spec.cache);
    try {
      await handler(ctx, input);
    } catch (error) {
      // A read whose connection was lost (a database restart, a failover, a terminated backend) is run
      // once more on a fresh connection before the client sees a 503: reads are idempotent.
      if (spec.method !== 'get' || classifyDatabaseError(error) !== 'unavailable' || ctx.headerSent) throw error;
      await handler(ctx, input);
    }
  });
}

/** PostgreSQL text cannot hold NUL: a parameter carrying one is a 400 naming it, whatever its schema. */
function refuseNul(values: Record<string, unknown>): void {
  const errors: ParamError[] = [];
  for (const [param, value] of Object.entries(values ?? {})) {
    const texts = Array.isArray(value) ? value : [value];
    if (texts.some((text) => typeof text === 'string' && text.includes('\u0000'))) errors.push({ param, message: 'must not contain a NUL character' });
  }
  if (errors.length > 0) throw invalidParameters(errors);
}

/** Whether the request is for an operation a station calls with its key (the route it matches, method included). */
export function isStationOperation(api: Api, ctx: Context): boolean {
  return api.router.match(ctx.path, ctx.method).pathAndMethod.some((layer) => layer.name !== undefined && layer.name !== null && api.stationOperations.has(layer.name));
}

/** Every registered route with its summary, for the discovery document. */
export function listRoutes(api: Api): { method: string; path: string; summary: string }[] {
  return api.registry.definitions.flatMap((definition) =>
    definition.type === 'route'
      ? [{ method: definition.route.method.toUpperCase(), path: definition.route.path, summary: definition.route.summary ?? '' }]
      : [],
  );
}
