import type { Duplex } from 'node:stream';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { CopyPool } from './pool.js';

/**
 * Streams `COPY ... TO STDOUT` through `into`, which is returned for the answer's body: memory stays
 * flat whatever the number of rows. `statementOf` builds the statement with the client's escaping (COPY
 * takes no bind parameters). When the HTTP client goes away the body is destroyed: the COPY is
 * cancelled by process id (which stops it at once, however loaded the machine) and its connection
 * discarded.
 */
export async function copyOut<T extends Duplex>(pool: CopyPool, statementOf: (client: pg.ClientBase) => string, into: T): Promise<T> {
  const client = await pool.connect();
  let copy;
  try {
    copy = client.query(copyTo(statementOf(client)));
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  copy.on('error', (error) => {
    client.release(error);
    into.destroy(error);
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
  return into;
}
