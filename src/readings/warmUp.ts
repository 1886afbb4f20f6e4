import type { Db } from '../db/pool.js';
import { aggregateReadingsJson } from './queries.js';
import { aggregatePeriods, type AggregatePeriod } from './schema.js';

/**
 * Opens every connection of the query pool and runs each aggregate query once on it (for no station):
 * a fresh backend loads the catalog of the rollup views on its first query (about 10 ms on timescale,
 * whose rollups are nested views) and the query code is compiled on its first call. Done at start,
 * so that the first request after a history upload is as fast as the next ones.
 */
export async function warmUpReads(db: Db, connections: number, periods: readonly AggregatePeriod[] = aggregatePeriods): Promise<void> {
  await Promise.all(
    Array.from({ length: connections }, () =>
      db.pool.connect(async (connection) => {
        for (const period of periods) await aggregateReadingsJson(connection, { stationId: '', period });
      }),
    ),
  );
}

const warming = new WeakMap<Db, Promise<void>>();

/**
 * After a refresh materialised new buckets, each backend re-reads the rollups' chunk catalog when it next
 * plans a query on them (about 5 ms on timescale); warms every query connection once, so that the first
 * aggregate read after a history upload is as fast as the next. Concurrent callers share one run.
 */
export function warmUpAfterRefresh(db: Db): Promise<void> {
  if (db.engine !== 'timescale') return Promise.resolve();
  let run = warming.get(db);
  if (!run) {
    // The daily query plans through the hourly and daily rollups: the common read, at a quarter of the cost.
    run = warmUpReads(db, db.poolSize, ['day'])
      .catch(() => {})
      .finally(() => warming.delete(db));
    warming.set(db, run);
  }
  return run;
}
