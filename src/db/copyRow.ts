import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { tupleFields, tuplesStart } from './copyBinary.js';
import { copyStatement, type CopyQuery } from './copyOut.js';
import { copyClientError, type PgPool } from './pool.js';

/**
 * The one row of a statement as its fields' bytes (null for a NULL), or null when it gives none, read with
 * `COPY (query) TO STDOUT (format binary)`. For a large text the database writes (a year of hourly
 * aggregates as JSON, 3.7 MB), the driver's rows would decode it into a string, in a buffer merged
 * again at every socket read, and the service would encode it back into bytes: most of the time and
 * the garbage of such an answer.
 */
export async function readCopyRow(client: pg.ClientBase, query: CopyQuery): Promise<(Buffer | null)[] | null> {
  const chunks: Buffer[] = [];
  for await (const chunk of client.query(copyTo(copyStatement(client, query, 'binary')))) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  return tupleFields(bytes, tuplesStart(bytes));
}

/**
 * The one row of `query` as readCopyRow reads it, on a connection of `pool`; a connection lost under it
 * makes it a ConnectionLostError (a 503, and a read retried).
 */
export async function copyRowOf(pool: PgPool, query: CopyQuery): Promise<(Buffer | null)[] | null> {
  const client = await pool.connect();
  try {
    const row = await readCopyRow(client, query);
    client.release();
    return row;
  } catch (error) {
    client.release(error as Error);
    throw copyClientError(client, error);
  }
}
