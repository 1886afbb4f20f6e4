import type pg from 'pg';
import type { PgPool } from './pgPool.js';

/**
 * A named prepared statement whose rows are `Row`: PostgreSQL parses and plans it once per connection
 * and runs it from then on with the values bound, and the driver's rows come as they are, unvalidated
 * (the SQL fixes their types). The hot reads use it (a latest reading, the station list, an aggregate,
 * the live stream's log); every other query is slonik's `sql.type`.
 */
export type Prepared<Row extends pg.QueryResultRow> = {
  readonly name: string;
  /** The rows for `values`, on a connection of `pool` (through its gate). */
  rows: (pool: PgPool, values?: readonly unknown[]) => Promise<Row[]>;
  /** The rows for `values` on a connection already held (to prepare it before the first request). */
  rowsOn: (client: pg.ClientBase, values?: readonly unknown[]) => Promise<Row[]>;
};

export function prepared<Row extends pg.QueryResultRow>(name: string, text: string): Prepared<Row> {
  const config = (values: readonly unknown[]): pg.QueryConfig => ({ name, text, values: [...values] });
  return {
    name,
    rows: async (pool, values = []) => (await pool.read<Row>(config(values))).rows,
    rowsOn: async (client, values = []) => (await client.query<Row>(config(values))).rows,
  };
}
