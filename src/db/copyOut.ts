import type { Duplex } from 'node:stream';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { copyClientError, type PgPool } from './pool.js';

/**
 * Streams `COPY ... TO STDOUT` through `into`, which is returned for the answer's body: memory stays
 * flat whatever the number of rows. `statementOf` builds the statement with the client's escaping (COPY
 * takes no bind parameters). When the HTTP client goes away the body is destroyed: the COPY is
 * cancelled by process id (which stops it at once, however loaded the machine) and its connection
 * discarded.
 */
export async function copyOut<T extends Duplex>(pool: PgPool, statementOf: (client: pg.ClientBase) => string, into: T): Promise<T> {
  const client = await pool.connect();
  let copy;
  try {
    copy = client.query(copyTo(statementOf(client)));
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  // Resolved once the first row (or the end) arrives, so that a COPY failing at once (a lost connection,
  // a statement the database refuses) is an error answer rather than a 200 cut short.
  let flowing = false;
  const started = new Promise<void>((resolve, reject) => {
    copy.once('data', () => {
      flowing = true;
      resolve();
    });
    copy.once('end', () => resolve());
    copy.once('error', (error) => reject(copyClientError(client, error)));
  });
  copy.on('error', (error) => {
    client.release(error);
    // Before the first row nobody listens on `into` yet: the caller gets the error from the promise.
    if (flowing) into.destroy(error);
    else into.destroy();
  });
  copy.on('end', () => client.release());
  copy.pipe(into);
  into.on('close', () => {
    if (copy.readableEnded) return;
    copy.destroy();
    const pid = (client as pg.PoolClient & { processID?: number }).processID;
    client.release(new Error('answer abandoned by the client'));
    if (pid) pool.query('select pg_cancel_backend($1)', [pid]).catch(() => {});
  });
  await started;
  return into;
}
