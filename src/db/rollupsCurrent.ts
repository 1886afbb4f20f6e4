import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from './pool.js';

/**
 * Resolves once the rollups hold every reading committed before the call for these stations (all when
 * null). On timescale a backfill is committed before its rollups are refreshed, and leaves a row in
 * rollup_backlog until they are: when one of the stations has such a row, this waits for a refresh, on
 * whichever instance the backfill was written. Costs one indexed lookup of an almost always empty table;
 * nothing on portable, whose rollups are exact in the writing transaction.
 */
export async function rollupsCurrent(db: Db, stationIds: readonly string[] | null): Promise<void> {
  if (db.engine !== 'timescale') return;
  const pending = await db.pool.exists(sql.type(z.object({ pending: z.number() }))`
    select 1 as pending from rollup_backlog
    ${stationIds ? sql.fragment`where station_id = any(${sql.array([...stationIds], 'text')})` : sql.fragment``}
  `);
  if (pending) await db.rollups.refresh();
}

const maxTries = 3;

/**
 * `read` with the rollups current for these stations (rollupsCurrent), read again when its own snapshot
 * still saw a backfill of one of them waiting (`waiting`): one committed after the check, whose live
 * readings the statement holds and whose earlier ones the rollups do not yet. At most three reads; the
 * last is given as it is.
 */
export async function readCurrent<T extends { waiting: boolean }>(db: Db, stationIds: readonly string[] | null, read: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    await rollupsCurrent(db, stationIds);
    const result = await read();
    if (!result.waiting || tries === maxTries) return result;
  }
}
