import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { tupleFields, tuplesStart } from './copyBinary.js';
import { copyStatement, withLiterals, type CopyQuery } from './copyOut.js';
import { copyClientError, type PgPool } from './pool.js';

/**
 * The one row of a statement as its fields' bytes (null for a NULL), or null when it gives none, read with
 * `COPY (query) TO STDOUT (format binary)`. For a large text the database writes (a year of hourly
 * aggregates as JSON, 3.7 MB), the driver's rows would decode it into a string, in a buffer merged
 * again at every socket read, and the service would encode it back into bytes: most of the time and
 * the garbage of such an answer.
 */
async function readCopyRow(client: pg.ClientBase, query: CopyQuery): Promise<(Buffer | null)[] | null> {
  const chunks: Buffer[] = [];
  for await (const chunk of client.query(copyTo(copyStatement(client, query, 'binary')))) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  return tupleFields(bytes, tuplesStart(bytes));
}

/**
 * The one row of each statement, as readCopyRow reads it, the statements read side by side: one connection
 * of `pool` is waited for, and each further statement gets one more only while more than half the pool is
 * free (connectIfFree), so that a busy pool reads them one after another rather than hold requests back.
 * All the connections read one snapshot (exported by the first one's transaction, imported by the others'
 * before any statement starts), so that together the statements see the data as one would, whatever
 * commits meanwhile.
 */
export async function copyRowsOfOneSnapshot(
  pool: PgPool, statements: readonly CopyQuery[],
): Promise<((Buffer | null)[] | null)[]> {
  const clients = [await pool.connect()];
  try {
    const first = clients[0]!;
    while (clients.length < statements.length) {
      const next = pool.connectIfFree();
      if (!next) break;
      clients.push(await next);
    }
    const together = statements.length > 1;
    if (together) {
      const begin = 'begin isolation level repeatable read read only';
      if (clients.length === 1) await first.query(begin);
      else {
        const [, exported] = (await first.query(`${begin}; select pg_export_snapshot() as id`)) as unknown as pg.QueryResult<{ id: string }>[];
        const snapshot = withLiterals(first, { text: 'set transaction snapshot $1', values: [exported!.rows[0]!.id] });
        await Promise.all(clients.slice(1).map((client) => client.query(`${begin}; ${snapshot}`)));
      }
    }
    const rows = new Array<(Buffer | null)[] | null>(statements.length);
    await Promise.all(clients.map(async (client, c) => {
      for (let i = c; i < statements.length; i += clients.length) rows[i] = await readCopyRow(client, statements[i]!);
      if (together) await client.query('commit');
    }));
    for (const client of clients) client.release();
    return rows;
  } catch (error) {
    for (const client of clients) client.release(error as Error);
    // A lost connection among them makes it a 503 (and a read retried), as for one.
    throw clients.map((client) => copyClientError(client, error)).find((e) => e !== error) ?? error;
  }
}
