import type pg from 'pg';

/**
 * A slonik statement as the pg driver takes it, to run on a PgPool (a replica's, the stream pool): its
 * placeholders numbered as slonik's own driver numbers them when it runs one ($slonik_1 is $1, a plain
 * replacement of the prefix its placeholders carry), its values in order.
 */
export const pgQueryOf = (statement: { sql: string; values: readonly unknown[] }): pg.QueryConfig => ({
  text: statement.sql.replaceAll('$slonik_', '$'),
  values: [...statement.values],
});
