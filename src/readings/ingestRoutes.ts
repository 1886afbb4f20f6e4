import { koaBody } from 'koa-body';
import { bodyProblem } from '../http/bodyProblem.js';
import { addRoute, type Api } from '../http/route.js';
import { badRequest, forbidden, payloadTooLarge, unsupportedMediaType } from '../http/problem.js';
import { parseInput } from '../http/validate.js';
import { authenticateStation } from '../stations/authenticate.js';
import { stationExists } from '../stations/queries.js';
import { ingestBodySchema, ingestDocumentedBodySchema, ingestResultSchema } from './ingestSchema.js';
import { parseReading, RowError } from './parseReading.js';
import { storeReadings, type NewReading } from './store.js';

const maxErrorDetails = 100;

export function addIngestRoutes(api: Api): void {
  const { config, db, log } = api.deps;
  // The byte limit is enforced while the body streams in (and from Content-Length before that),
  // so an oversized batch is refused without being read whole, let alone parsed.
  const readJson = koaBody({
    json: true,
    jsonStrict: true,
    jsonLimit: config.ingestMaxBytes,
    urlencoded: false,
    text: false,
    multipart: false,
    patchNode: false,
    patchKoa: true,
    onError: (error) => {
      throw bodyProblem(error);
    },
  });

  addRoute(
    api,
    {
      method: 'post',
      path: '/api/v1/ingest/environmental/',
      operationId: 'ingestReadings',
      summary: 'Submit a batch of readings from a field station',
      description:
        'Idempotent on (station, timestamp): re-sending a batch stores nothing twice. A 201 means every accepted reading is ' +
        'committed and, except when the rollup refresh after the commit failed (logged, healed by the service within ' +
        'ROLLUP_HEAL_SECONDS), already in every aggregate. A row that cannot be stored is counted in errors; the others are stored. ' +
        `At most ${config.ingestMaxReadings} readings and ${config.ingestMaxBytes} bytes per request.`,
      tag: 'Ingest',
      security: true,
      body: {
        contentType: 'application/json',
        schema: ingestDocumentedBodySchema,
        description: 'The batch. A body holding a key named `__proto__` (or `constructor` with a `prototype`) anywhere is refused whole with a 400: such keys alter objects in many JSON consumers.',
      },
      responses: {
        201: { description: 'Stored', content: { 'application/json': ingestResultSchema } },
        400: { description: 'Empty readings, a station_id that is not the key\'s, a body that is not JSON (or does not decompress), or one with a `__proto__` key' },
        401: { description: 'No Authorization: Token header' },
        403: { description: 'The key is unknown or revoked, or the station is unknown' },
        413: { description: 'Too many readings or too many bytes' },
        415: { description: 'The body is not application/json' },
      },
    },
    async (ctx) => {
      const keyStation = await authenticateStation(ctx, db.pool);
      if (!ctx.is('application/json', '+json')) {
        throw unsupportedMediaType(`the request body must be application/json, not ${ctx.request.type || 'missing'}`);
      }
      // Content codings are case-insensitive (RFC 9110); the decoder only knows them in lower case.
      const encoding = ctx.req.headers['content-encoding'];
      if (encoding) ctx.req.headers['content-encoding'] = encoding.trim().toLowerCase();
      await readJson(ctx, async () => {});
      const body = parseInput(ingestBodySchema, ctx.request.body as Record<string, unknown>, 'body');
      if (body.readings.length > config.ingestMaxReadings) {
        throw payloadTooLarge(`a batch holds at most ${config.ingestMaxReadings} readings; this one has ${body.readings.length}: split it`);
      }
      if (body.station_id !== keyStation) {
        if (!(await stationExists(db.pool, body.station_id))) throw forbidden(`station '${body.station_id}' is unknown`);
        throw badRequest(`station_id '${body.station_id}' does not match the key, which belongs to station '${keyStation}'`, [
          { param: 'station_id', message: `must be ${keyStation}, the station that owns the key` },
        ]);
      }

      const rows: NewReading[] = [];
      const errorDetails: { index: number; reason: string }[] = [];
      let errors = 0;
      // A reading further ahead of the server's clock than the tolerance is a row error: stored, it would be
      // the station's latest reading for good and make a dead station look fresh.
      const latestMs = Date.now() + config.ingestMaxFutureSeconds * 1000;
      body.readings.forEach((raw, index) => {
        try {
          rows.push(parseReading(raw, latestMs));
        } catch (error) {
          if (!(error instanceof RowError)) throw error;
          errors++;
          if (errorDetails.length < maxErrorDetails) errorDetails.push({ index, reason: error.message });
        }
      });
      const stored = rows.length > 0 ? await storeReadings(db, keyStation, rows) : { accepted: 0, duplicates: 0, refreshed: true };
      // Committed is committed: a rollup refresh that failed after the commit is healed by the service
      // within ROLLUP_HEAL_SECONDS, and a 5xx here would only make the station re-send into duplicates.
      if (!stored.refreshed) log.warn({ req_id: ctx.state.requestId, station: keyStation }, 'readings committed; their rollup refresh failed and is left to healing');
      ctx.status = 201;
      ctx.body = { accepted: stored.accepted, duplicates: stored.duplicates, errors, error_details: errorDetails };
    },
  );
}
