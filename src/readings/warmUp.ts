import type { Db } from '../db/pool.js';
import { aggregateReadingsJson } from './queries.js';
import { aggregatePeriods } from './schema.js';

/**
 * Opens every connection of the query pool and runs each aggregate query once on it (for no station):
 * a fresh backend loads the catalog of the rollup views on its first query (about 10 ms on timescale,
 * whose rollups are nested views) and the query code is compiled on its first call. Done at start,
 * so that the first request after a history upload is as fast as the next ones.
 */
export async function warmUpReads(db: Db, connections: number): Promise<void> {
  await Promise.all(
    Array.from({ length: connections }, () =>
      db.pool.connect(async (connection) => {
        for (const period of aggregatePeriods) await aggregateReadingsJson(connection, { stationId: '', period });
      }),
    ),
  );
}
