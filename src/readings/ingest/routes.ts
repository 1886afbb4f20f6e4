import { bodyProblem } from '../../http/bodyProblem.js';
import { addRoute, type Api } from '../../http/route.js';
import { badRequest, forbidden, payloadTooLarge, Problem } from '../../http/problem.js';
import { z } from '../../http/zod.js';
import { authenticateStation } from '../../stations/authenticate.js';
import { stationExists } from '../../stations/queries.js';
import type { Context } from 'koa';
import { ingestFormat, ingestMediaTypes, parseBatch, type IngestFormat, type PostedBatch } from './batch.js';
import { readBody } from '../../http/requestBody.js';
import { BatchEncoder } from './encoder.js';
import { batchesPerAddress, batchesPerStation, createIngestFairness, failedKeysPerMinute } from './fairness.js';
import { RowError } from './rules.js';
import { ingestDocumentedBodySchema, ingestResultSchema } from './schema.js';
import { storeBatch } from './store.js';

// error_details lists at most this many rows; errors counts them all.
const maxErrorDetails = 100;

export function addIngestRoutes(api: Api): void {
  const { config, db } = api.deps;
  const fairness = createIngestFairness();

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
        description: 'The batch, in one of three formats with the same rules and counts: JSON (`station_id` and `readings`), newline-delimited JSON or CSV. Every row sent is counted once: accepted + duplicates + errors is the number of readings sent. Text that is not UTF-8 makes its reading a row error; it is never stored altered. A body holding a key named `__proto__` (or `constructor` with a `prototype`) anywhere is refused whole with a 400: such keys alter objects in many JSON consumers.',
      },
      responses: {
        201: { description: 'Stored', content: { 'application/json': ingestResultSchema } },
        400: { description: 'Empty readings, a station_id that is not the key\'s, a body that is not JSON or CSV as its type says (or does not decompress), a CSV quote never closed, or a `__proto__` key (or CSV column)' },
        401: { description: 'No Authorization: Token header' },
        403: { description: 'The key is unknown or revoked, or the station is unknown' },
        408: { description: 'The body stopped arriving for STREAM_STALL_MS' },
        413: { description: 'Too many readings or too many bytes' },
        415: { description: 'The body is not application/json, application/x-ndjson or text/csv' },
        429: { description: `More than ${batchesPerStation} batches of the station, or ${batchesPerAddress} from the address, at a time; or more than ${failedKeysPerMinute} requests with a missing or invalid key from the address in a minute. Retry-After says when to try again` },
      },
    },
    async (ctx) => {
      // 1. The key: nothing of the body is read before it is known.
      const authorization = ctx.get('Authorization');
      fairness.checkAddress(ctx.ip, authorization);
      const keyStation = await authenticateStation(ctx, db.pool).catch((error: unknown) => {
        if (error instanceof Problem && (error.status === 401 || error.status === 403)) fairness.failed(ctx.ip, authorization);
        throw error;
      });
      fairness.authenticated(authorization);
      const format = ingestFormat(ctx);
      const release = fairness.claim(keyStation, ctx.ip);
      try {
        await takeBatch(ctx, keyStation, format);
      } finally {
        release();
      }
    },
  );

  /** Steps 2 and 3 of a batch whose key is known: read it, judge each reading, store it. */
  async function takeBatch(ctx: Context, keyStation: string, format: IngestFormat): Promise<void> {
    // 2. The batch: read whole, parsed by a general parser, each reading held to the rules.
    const bytes = await readBody(ctx.req, config.ingestMaxBytes, config.streamStallMs).catch((error: Error) => Promise.reject(bodyProblem(error)));
    const posted = parseBatch(bytes, format);
    await checkBatch(posted, keyStation);
    // A reading further ahead of the server's clock than the tolerance is a row error: stored, it would
    // be the station's latest reading for good and make a dead station look fresh.
    const encoder = new BatchEncoder(keyStation, Date.now() + config.ingestMaxFutureSeconds * 1000);
    const errorDetails: { index: number; reason: string }[] = [];
    let errors = 0;
    posted.readings.forEach((reading, index) => {
      try {
        if (reading instanceof RowError) throw reading;
        encoder.add(reading);
      } catch (error) {
        if (!(error instanceof RowError)) throw error;
        errors++;
        if (errorDetails.length < maxErrorDetails) errorDetails.push({ index, reason: error.message });
      }
    });
    // 3. The store: committed when it returns.
    const stored = await storeBatch(db, keyStation, encoder.rows);
    ctx.status = 201;
    ctx.body = { accepted: stored.accepted, duplicates: stored.duplicates, errors, error_details: errorDetails };
  }

  /** The checks of a whole batch: not too many readings, and the station the key names. */
  async function checkBatch(posted: PostedBatch, keyStation: string): Promise<void> {
    const count = posted.readings.length;
    if (count > config.ingestMaxReadings) {
      throw payloadTooLarge(`a batch holds at most ${config.ingestMaxReadings} readings; this one has ${count}: split it`);
    }
    if (posted.stationId !== null && posted.stationId !== keyStation) {
      if (!(await stationExists(db.pool, posted.stationId))) throw forbidden(`station '${posted.stationId}' is unknown`);
      throw badRequest(`station_id '${posted.stationId}' does not match the key, which belongs to station '${keyStation}'`, [
        { param: 'station_id', message: `must be ${keyStation}, the station that owns the key` },
      ]);
    }
  }
}
