import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
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
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of client.query(copyTo(`copy (${statementOf(client)}) to stdout (format binary)`))) chunks.push(chunk as Buffer);
    client.release();
    return firstTuple(Buffer.concat(chunks));
  } catch (error) {
    client.release(error as Error);
    throw copyClientError(client, error);
  }
}

// The binary format's header: an 11-byte signature, a flags word, then a header extension of the length given.
const signatureBytes = 11;

function firstTuple(bytes: Buffer): (Buffer | null)[] | null {
  const at = signatureBytes + 4;
  return tupleFields(bytes, at + 4 + bytes.readInt32BE(at));
}

/** The fields of the binary COPY tuple at `at`, each as a view of its bytes or null; null at the end mark. */
export function tupleFields(bytes: Buffer, at: number): (Buffer | null)[] | null {
  const count = bytes.readInt16BE(at);
  at += 2;
  if (count < 0) return null;
  const fields: (Buffer | null)[] = [];
  for (let f = 0; f < count; f++) {
    const length = bytes.readInt32BE(at);
    at += 4;
    fields.push(length < 0 ? null : bytes.subarray(at, at + length));
    at += Math.max(length, 0);
  }
  return fields;
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
