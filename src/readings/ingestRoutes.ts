import { ArrivingBody } from '../http/arrivingBody.js';
import { bodyProblem } from '../http/bodyProblem.js';
import { addRoute, type Api } from '../http/route.js';
import { badRequest, forbidden, payloadTooLarge } from '../http/problem.js';
import { z } from '../http/zod.js';
import { authenticateStation } from '../stations/authenticate.js';
import { stationExists } from '../stations/queries.js';
import { arrivingReadings, type ArrivingReadings, type Progress } from './arrivingReadings.js';
import { BatchIntake } from './batchIntake.js';
import { ingestFormat, ingestMediaTypes, parseIngestBody, type PostedBatch } from './ingestBody.js';
import { ingestDocumentedBodySchema, ingestResultSchema } from './ingestSchema.js';
import { NotArriving, storeArriving, storeBatch, type StoreResult } from './store.js';

const encodeSlice = 1_000;
// How long a batch may take to arrive while a connection waits for it.
const arrivalBudgetMs = 1_000;

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
        description: 'The batch, in one of three formats with the same rules and counts: JSON (`station_id` and `readings`), newline-delimited JSON or CSV. All three are read in place from the body\'s bytes; CSV, with no keys to read, is as fast as JSON or faster (a body with quoted fields is parsed first). A body holding a key named `__proto__` (or `constructor` with a `prototype`) anywhere is refused whole with a 400: such keys alter objects in many JSON consumers.',
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
      // The body is read from the first moment, while the key is looked up.
      const body = new ArrivingBody(ctx.req, config.ingestMaxBytes);
      try {
        const keyStation = await authenticateStation(ctx, db.pool);
        const format = ingestFormat(ctx);
        // A reading further ahead of the server's clock than the tolerance is a row error: stored, it would
        // be the station's latest reading for good and make a dead station look fresh.
        const latestMs = Date.now() + config.ingestMaxFutureSeconds * 1000;
        let intake = new BatchIntake(keyStation, latestMs);
        const arriving = await storeArriving(db, {
          stationId: keyStation,
          rows: intake.rows,
          takeMore: takeArriving(body, arrivingReadings(format), intake, keyStation, config.ingestMaxReadings),
        });
        let stored: StoreResult;
        if (typeof arriving === 'object') {
          stored = arriving;
        } else {
          // Its COPY was rolled back: the database has read every row sent, and the buffer can be reused.
          intake.rows.release();
          // Not stored as it arrived: the whole body, parsed, checked and stored, knowing what was found.
          const posted = parseIngestBody(await body.whole().catch((error: Error) => Promise.reject(bodyProblem(error))), format);
          await checkBatch(posted, keyStation);
          intake = new BatchIntake(keyStation, latestMs);
          // Encoded a slice at a time as COPY takes the rows (see storeBatch).
          const encodeMore = () => {
            const end = Math.min(intake.count + encodeSlice, posted.count);
            try {
              while (intake.count < end) intake.take(posted.encode);
            } catch (error) {
              // A reading that holds a __proto__ key refuses the body whole, as in the general parser.
              throw bodyProblem(error as Error);
            }
            return intake.count < posted.count;
          };
          const known = arriving === 'repeats' || arriving === 'unordered' ? arriving : undefined;
          stored = await storeBatch(db, { stationId: keyStation, rows: intake.rows, encodeMore }, known);
        }
        // Committed: every row was read. After a failure the rows are left to the collector instead, as a
        // connection given up on may still hold some of them to write.
        intake.rows.release();
        ctx.status = 201;
        ctx.body = { accepted: stored.accepted, duplicates: stored.duplicates, errors: intake.errors, error_details: intake.errorDetails };
      } finally {
        body.release();
      }
    },
  );

  /** The checks of a whole batch: not too many readings, and the station the key names. */
  async function checkBatch(posted: PostedBatch, keyStation: string): Promise<void> {
    if (posted.count > config.ingestMaxReadings) {
      throw payloadTooLarge(`a batch holds at most ${config.ingestMaxReadings} readings; this one has ${posted.count}: split it`);
    }
    if (posted.stationId !== null && posted.stationId !== keyStation) {
      if (!(await stationExists(db.pool, posted.stationId))) throw forbidden(`station '${posted.stationId}' is unknown`);
      throw badRequest(`station_id '${posted.stationId}' does not match the key, which belongs to station '${keyStation}'`, [
        { param: 'station_id', message: `must be ${keyStation}, the station that owns the key` },
      ]);
    }
  }
}

/**
 * takeMore of an arriving batch: the readings whose bytes are here, a slice at a time. Anything the
 * checks of a whole batch would refuse (too many readings, another station) is left to them: the body
 * is then not one to store as it arrives. A body that has not all arrived within a second of its
 * transaction's start is not either: its connection is given back while the rest comes.
 */
function takeArriving(body: ArrivingBody, readings: ArrivingReadings, intake: BatchIntake, keyStation: string, maxReadings: number) {
  let deadline = 0;
  return async (): Promise<boolean> => {
    // First asked for once the transaction is open.
    if (deadline === 0) deadline = Date.now() + arrivalBudgetMs;
    for (;;) {
      const before = intake.count;
      let progress: Progress;
      try {
        progress = readings.advance(body.view(), body.complete, intake, Math.min(before + encodeSlice, maxReadings + 1));
      } catch (error) {
        // A key refusing the body whole: the whole-body parser names it.
        if (error instanceof SyntaxError) throw new NotArriving('unusual');
        throw error;
      }
      if (progress === 'refused' || intake.count > maxReadings) throw new NotArriving('unusual');
      if (progress === 'done') {
        if (readings.stationId !== null && readings.stationId !== keyStation) throw new NotArriving('unusual');
        return false;
      }
      if (progress === 'paused' || intake.count > before) return true;
      if (body.complete) throw new NotArriving('unusual');
      const arrived = await body.more(deadline).catch((error: Error) => Promise.reject(bodyProblem(error)));
      if (!arrived) throw new NotArriving('slow');
    }
  };
}
