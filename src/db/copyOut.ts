import type { Duplex } from 'node:stream';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { beginOneSnapshot } from './oneSnapshot.js';
import { copyClientError, type PgPool } from './pool.js';

/** A query with bind parameters ($1, $2, ...), as COPY is to run it. */
export type CopyQuery = { text: string; values: readonly (string | number | null)[] };

/**
 * A statement of bind parameters ($1, $2, ...) with each made a literal: text escaped by the client, a
 * number as written, null as NULL. COPY takes no parameters; this is the one place the service builds
 * SQL literals, and every value has passed its schema before it gets here.
 */
export function withLiterals(client: pg.ClientBase, { text, values }: CopyQuery): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => {
    const value = values[Number(n) - 1];
    if (value === undefined) throw new Error(`no value for $${n}`);
    if (value === null) return 'null';
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new Error(`$${n} is not a finite number`);
      return `(${value})`;
    }
    return client.escapeLiteral(value);
  });
}

/** The COPY statement that writes `query`'s rows to the client in `format` (text, csv or binary). */
export function copyStatement(client: pg.ClientBase, query: CopyQuery, format: 'text' | 'csv' | 'binary' = 'text'): string {
  return `copy (${withLiterals(client, query)}) to stdout with (format ${format})`;
}

/**
 * Streams `query`'s rows, as COPY writes them in `format`, through `into`, which is returned for the
 * answer's body: memory stays flat whatever the number of rows. When the HTTP client goes away the
 * body is destroyed: the COPY is cancelled by process id (which stops it at once, however loaded the
 * machine) and its connection discarded.
 *
 * With `prepare`, the COPY runs on the same connection after it, in one REPEATABLE READ, READ ONLY
 * transaction (beginOneSnapshot): what `prepare` reads (a series' facts, the readings before a range)
 * and the rows COPY writes are one snapshot of the database. The transaction commits when COPY ends.
 */
export async function copyOut<T extends Duplex>(
  pool: PgPool, query: CopyQuery, format: 'text' | 'csv' | 'binary', into: T, prepare?: (client: pg.ClientBase) => Promise<void>,
): Promise<T> {
  const client = await pool.connect();
  let copy;
  try {
    if (prepare) {
      await beginOneSnapshot(client);
      await prepare(client);
    }
    copy = client.query(copyTo(copyStatement(client, query, format)));
  } catch (error) {
    client.release(error as Error);
    throw copyClientError(client, error);
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
  copy.on('end', () => {
    if (!prepare) return client.release();
    client.query('commit').then(() => client.release(), (error: Error) => client.release(error));
  });
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
