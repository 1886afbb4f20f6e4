import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { tupleFields, tuplesStart } from './copyBinary.js';
import { copyClientError, type PgPool } from './pool.js';

/**
 * The one row of a query as its fields' bytes (null for a NULL), or null when it gives none, read with
 * `COPY (query) TO STDOUT (format binary)`. For a large text the database writes (a year of hourly
 * aggregates as JSON, 3.7 MB), the driver's rows would decode it into a string, in a buffer merged
 * again at every socket read, and the service would encode it back into bytes: about 45 ms and most of
 * the garbage of such an answer here. `statementOf` builds the query with the client's escaping (COPY
 * takes no bind parameters).
 */
export async function copyRow(pool: PgPool, statementOf: (client: pg.ClientBase) => string): Promise<(Buffer | null)[] | null> {
  const client = await pool.connect();
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of client.query(copyTo(`copy (${statementOf(client)}) to stdout (format binary)`))) chunks.push(chunk as Buffer);
    client.release();
  } catch (error) {
    client.release(error as Error);
    throw copyClientError(client, error);
  }
  const bytes = Buffer.concat(chunks);
  return tupleFields(bytes, tuplesStart(bytes));
}

/**
 * A statement of bind parameters ($1, $2, ...) with each made a literal: text escaped by the client, a
 * number as written, null as NULL. For COPY, which takes no parameters.
 */
export function withLiterals(client: pg.ClientBase, text: string, values: readonly (string | number | null)[]): string {
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
