import type pg from 'pg';
import { copyClientError, type PgPool } from './pool.js';

/** Opens a transaction whose statements all see one snapshot of the database, and write nothing. */
export const beginOneSnapshot = (client: pg.ClientBase) => client.query('begin isolation level repeatable read read only');

/**
 * Runs `read` on one connection of `pool` inside a REPEATABLE READ, READ ONLY transaction: every
 * statement it issues sees the database as it stood when the first one ran, so that several reads
 * answering one request (a series' facts, then its rows) agree, whatever commits meanwhile. A
 * connection lost under it is a ConnectionLostError (a 503, and a read retried).
 */
export async function readInOneSnapshot<T>(pool: PgPool, read: (client: pg.ClientBase) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await beginOneSnapshot(client);
    const result = await read(client);
    await client.query('commit');
    client.release();
    return result;
  } catch (error) {
    client.release(error as Error);
    throw copyClientError(client, error);
  }
}
