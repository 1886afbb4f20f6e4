import type pg from 'pg';
import type { Db } from '../db/pool.js';
import { prepareAggregate } from '../readings/aggregates/queries.js';
import { findLatestReadingOn } from '../readings/history/queries.js';
import { aggregatePeriods } from '../readings/core/params.js';

/**
 * Opens every connection of the read pool and prepares the hot reads on it (for no station): a fresh
 * backend loads the catalog of the rollups on its first query (slow on timescale, whose rollups are
 * nested views), and a statement is planned on its first execution. Done at start, so that the first
 * requests are as fast as the next ones.
 */
export async function warmUpReads(db: Db, connections: number): Promise<void> {
  const clients: pg.PoolClient[] = [];
  try {
    for (let i = 0; i < connections; i++) clients.push(await db.readPool.connect());
    await Promise.all(
      clients.map(async (client) => {
        await findLatestReadingOn(client, '');
        for (const period of aggregatePeriods) {
          await prepareAggregate(client, { stationId: '', period });
          if (period === 'week' || period === 'month') await prepareAggregate(client, { stationId: '', period, from: '2000-01-01' });
        }
      }),
    );
  } finally {
    for (const client of clients) client.release();
  }
}
