import type pg from 'pg';

/**
 * A plain `pg` pool, gated like the query pool: for COPY, which slonik does not expose, and for the hot
 * reads, which skip slonik's per-query work and can use prepared statements and binary rows.
 */
export type PgPool = {
  /** A client for the caller alone; release it (with an error to discard it). PoolExhaustedError after `waitMs`. */
  connect: () => Promise<pg.PoolClient>;
  /**
   * A client as `connect` gives, for work that can do without it: only while more than half the pool is
   * free now, so that the short reads sharing the pool (a latest reading) find one; null, without
   * waiting, when not.
   */
  connectIfFree: () => Promise<pg.PoolClient> | null;
  /** A short query on a connection of the pool, outside the gate (to cancel a backend). */
  query: (text: string, values?: unknown[]) => Promise<pg.QueryResult>;
  /** A query through the gate; a lost connection fails it with ConnectionLostError (a 503, and a read retried). */
  read: <R extends pg.QueryResultRow = pg.QueryResultRow>(config: pg.QueryConfig) => Promise<pg.QueryResult<R>>;
  /** Connections checked out now. */
  busy: () => number;
  end: () => Promise<void>;
};
