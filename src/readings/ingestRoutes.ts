import { bodyProblem } from '../http/bodyProblem.js';
import { addRoute, type Api } from '../http/route.js';
import { badRequest, forbidden, payloadTooLarge } from '../http/problem.js';
import { z } from '../http/zod.js';
import { authenticateStation } from '../stations/authenticate.js';
import { stationExists } from '../stations/queries.js';
import { BatchEncoder } from './batchEncoder.js';
import { ingestFormat, ingestMediaTypes, readIngestBody } from './ingestBody.js';
import { ingestDocumentedBodySchema, ingestResultSchema } from './ingestSchema.js';
import { RowError } from './readingRules.js';
import { storeBatch } from './store.js';

const maxErrorDetails = 100;
const encodeSlice = 1_000;

export function addIngestRoutes(api: Api): void {
  const { config, db } = api.deps;

  addRoute(
    api,
    {
      method: 'post',
      path: '/api/v1/ingest/environmental/',
      operationId: 'ingestReadings',
      summary: 'Submit a batch of readings from a field station',
      description:
        'Idempotent on (station, timestamp): re-sending a batch stores nothing twice. A 201 means every accepted reading is ' +
        'committed and in every aggregate read after it. A row that cannot be stored is counted in errors; the others are stored. ' +
        `At most ${config.ingestMaxReadings} readings and ${config.ingestMaxBytes} bytes per request.`,
      tag: 'Ingest',
      security: true,
      body: {
        content: {
          [ingestMediaTypes.json]: ingestDocumentedBodySchema,
          [ingestMediaTypes.ndjson]: z.string().openapi({ description: 'One reading object per line, as in `readings`; the key names the station. A line that is not JSON is a row error.' }),
          [ingestMediaTypes.csv]: z.string().openapi({ description: 'A header row naming the columns as a reading names its keys (`timestamp` required; module_data as JSON text), then one reading per row; an empty field is null. The key names the station. A row with another field count than the header is a row error.' }),
        },
        description: 'The batch, in one of three formats with the same rules and counts: JSON (`station_id` and `readings`), newline-delimited JSON or CSV. JSON and NDJSON are read in place and are the fastest; CSV rows are parsed first. A body holding a key named `__proto__` (or `constructor` with a `prototype`) anywhere is refused whole with a 400: such keys alter objects in many JSON consumers.',
      },
      responses: {
        201: { description: 'Stored', content: { 'application/json': ingestResultSchema } },
        400: { description: 'Empty readings, a station_id that is not the key\'s, a body that is not JSON or CSV as its type says (or does not decompress), or one with a `__proto__` key' },
        401: { description: 'No Authorization: Token header' },
        403: { description: 'The key is unknown or revoked, or the station is unknown' },
        413: { description: 'Too many readings or too many bytes' },
        415: { description: 'The body is not application/json, application/x-ndjson or text/csv' },
      },
    },
    async (ctx) => {
      const keyStation = await authenticateStation(ctx, db.pool);
      const posted = await readIngestBody(ctx, ingestFormat(ctx), config.ingestMaxBytes);
      if (posted.count > config.ingestMaxReadings) {
        throw payloadTooLarge(`a batch holds at most ${config.ingestMaxReadings} readings; this one has ${posted.count}: split it`);
      }
      if (posted.stationId !== null && posted.stationId !== keyStation) {
        if (!(await stationExists(db.pool, posted.stationId))) throw forbidden(`station '${posted.stationId}' is unknown`);
        throw badRequest(`station_id '${posted.stationId}' does not match the key, which belongs to station '${keyStation}'`, [
          { param: 'station_id', message: `must be ${keyStation}, the station that owns the key` },
        ]);
      }

      // A reading further ahead of the server's clock than the tolerance is a row error: stored, it would be
      // the station's latest reading for good and make a dead station look fresh.
      const encoder = new BatchEncoder(keyStation, Date.now() + config.ingestMaxFutureSeconds * 1000);
      const errorDetails: { index: number; reason: string }[] = [];
      let errors = 0;
      let next = 0;
      // Encoded a slice at a time as COPY takes the lines (see storeBatch).
      const encodeMore = () => {
        const end = Math.min(next + encodeSlice, posted.count);
        for (; next < end; next++) {
          try {
            posted.encode(encoder, next);
          } catch (error) {
            // A reading that holds a __proto__ key refuses the body whole, as in the general parser.
            if (!(error instanceof RowError)) throw bodyProblem(error as Error);
            errors++;
            if (errorDetails.length < maxErrorDetails) errorDetails.push({ index: next, reason: error.message });
          }
        }
        return next < posted.count;
      };
      const stored = await storeBatch(db, { stationId: keyStation, lines: encoder.lines, encodeMore });
      ctx.status = 201;
      ctx.body = { accepted: stored.accepted, duplicates: stored.duplicates, errors, error_details: errorDetails };
    },
  );
}
