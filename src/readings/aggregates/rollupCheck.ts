import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../db/pool.js';
import { refreshLockKey } from '../../db/rollupRefresher.js';
import { lockStationExclusively } from '../core/stationLock.js';

/** The rollup levels, finest first: each timescale level is materialised from the one before it. */
export const rollupLevels = [
  { rollup: 'readings_hourly', width: '1 hour' },
  { rollup: 'readings_daily', width: '1 day' },
  { rollup: 'readings_weekly', width: '1 week' },
  { rollup: 'readings_monthly', width: '1 month' },
] as const;

const difference = z.object({
  station_id: z.string(),
  bucket: z.string(),
  quality_flag: z.string(),
  rollup_n: z.number().nullable(),
  readings_n: z.number().nullable(),
  difference: z.string(),
});
export type RollupDifference = z.infer<typeof difference> & { rollup: string };

/**
 * The buckets of one level that differ from a GROUP BY over the readings (envmon_rollup_differences). An
 * operator's check of years of readings: on a connection of the downloads' pool, without the statement
 * timeout that bounds the service's queries.
 */
export async function rollupDifferences(db: Db, rollup: string, stationId?: string): Promise<RollupDifference[]> {
  const client = await db.streamPool.connect();
  try {
    await client.query('begin');
    await client.query('set local statement_timeout = 0');
    const { rows } = await client.query<z.infer<typeof difference>>(`
      select station_id, bucket, quality_flag, rollup_n::float8 as rollup_n, readings_n::float8 as readings_n, difference
      from envmon_rollup_differences($1, $2)`, [rollup, stationId ?? null]);
    await client.query('commit');
    client.release();
    return rows.map((row) => ({ ...difference.parse({ ...row, bucket: (row.bucket as unknown as Date).toISOString() }), rollup }));
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
}

/**
 * Makes the differing buckets of one level again from the readings, and moves each station's data version
 * on, so that no aggregate kept from the wrong rows is served again. Portable: each bucket's rows of the
 * station are summarised afresh while the station's lock is held alone. Timescale: each bucket is
 * refreshed with force, under the lock every refresh of the rollups takes.
 */
export async function remakeBuckets(db: Db, rollup: string, width: string, differences: readonly RollupDifference[]): Promise<void> {
  const stations = [...new Set(differences.map((d) => d.station_id))];
  if (db.engine === 'timescale') {
    // Only buckets the level has materialised: a later one is computed from the level below when read, and a
    // refresh of it would move the level's watermark past live readings.
    const materialised = await db.pool.anyFirst(sql.type(z.object({ bucket: z.string() }))`
      select distinct bucket from unnest(${sql.array(differences.map((d) => d.bucket), 'timestamptz')}) as d (bucket)
      where bucket + ${width}::interval <= time_bucket(${width}::interval, envmon_rollup_horizon())`);
    const buckets = [...new Set(materialised)];
    await db.pool.connect(async (connection) => {
      await connection.query(sql.type(z.object({}))`select pg_advisory_lock(${refreshLockKey}::bigint)`);
      try {
        for (const bucket of buckets) {
          await connection.query(sql.type(z.object({}))`
            call refresh_continuous_aggregate(${rollup}::regclass, ${bucket}::timestamptz, ${bucket}::timestamptz + ${width}::interval, force => true)`);
        }
      } finally {
        await connection.query(sql.type(z.object({}))`select pg_advisory_unlock(${refreshLockKey}::bigint)`);
      }
    });
  }
  for (const station of stations) {
    await db.pool.transaction(async (tx) => {
      await lockStationExclusively(tx, station);
      if (db.engine !== 'timescale') {
        for (const bucket of new Set(differences.filter((d) => d.station_id === station).map((d) => d.bucket))) {
          await tx.query(sql.type(z.object({}))`
            select envmon_rollup_remake(${rollup}, ${station}, ${bucket}::timestamptz, ${bucket}::timestamptz + ${width}::interval)`);
        }
      }
      // A new version without a word on the settled mark: the trigger of 0020 takes a new one too.
      await tx.query(sql.type(z.object({}))`update station_latest set version = nextval('station_data_version') where station_id = ${station}`);
    });
  }
}
