import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Db } from '../db/pool.js';

// The timescale engine's rollups, finest first: each is a continuous aggregate on the one before.
const rollups = [
  { name: 'readings_hourly', width: '1 hour' },
  { name: 'readings_daily', width: '1 day' },
  { name: 'readings_weekly', width: '1 week' },
  { name: 'readings_monthly', width: '1 month' },
] as const;

// TimescaleDB refuses a refresh whose range overlaps one in progress (55P03), and stations posting
// the same minute always overlap. Refreshes of one rollup therefore queue on a session advisory lock
// shared by every process on the database; 55P03 can still come from a policy job, and is retried.
const refreshLockBase = 7_301_946_500;
const lockNotAvailable = '55P03';

const noRows = z.object({});
const windowRow = z.object({ start: z.string().nullable(), end: z.string() });

/**
 * Makes the rollups exact after readings between `first` and `last` were written (timescale only; the
 * portable engine's triggers did it in the writing transaction).
 *
 * Above a rollup's watermark (the end of what it has materialised) real-time aggregation reads the
 * raw readings, so new data there is already counted: that is where live readings land, and they cost
 * one query. Below it the materialised buckets are stale until refreshed, so exactly the touched
 * buckets up to the watermark are refreshed here, after commit, finest first. The window never passes
 * the watermark: moving it past buckets nobody materialised would hide their readings.
 */
export async function refreshRollups(db: Db, first: string, last: string): Promise<void> {
  if (db.engine !== 'timescale') return;
  await db.pool.connect(async (connection) => {
    for (const [index, rollup] of rollups.entries()) {
      const window = await connection.maybeOne(sql.type(windowRow)`
        select time_bucket(${rollup.width}::interval, ${first}::timestamptz) as start,
               least(time_bucket(${rollup.width}::interval, ${last}::timestamptz) + ${rollup.width}::interval, w.watermark) as end
        from ${watermark(rollup.name)} w
        where ${first}::timestamptz < w.watermark
      `);
      if (window) await refreshWindow(connection, index, window.start, window.end);
    }
  });
}

/**
 * Materialises every complete bucket from each rollup's watermark up to now: the refresh policies'
 * work, done by the service so that reads of long histories stay fast where the policies cannot run.
 * The window starts at the watermark, so it never leaves a gap behind it. Correctness never depends on it.
 */
export async function materializeRollups(db: Db): Promise<void> {
  if (db.engine !== 'timescale') return;
  await db.pool.connect(async (connection) => {
    for (const [index, rollup] of rollups.entries()) {
      const window = await connection.maybeOne(sql.type(windowRow)`
        select case when w.watermark < '1900-01-01' then null else w.watermark end as start,
               time_bucket(${rollup.width}::interval, now()) as end
        from ${watermark(rollup.name)} w
        where w.watermark < time_bucket(${rollup.width}::interval, now())
      `);
      if (window) await refreshWindow(connection, index, window.start, window.end);
    }
  });
}

/** The rollup's watermark, as a one-row relation `w(watermark)`; before any materialisation it is the minimum timestamp. */
function watermark(rollup: string) {
  return sql.fragment`(
    select _timescaledb_functions.to_timestamp(_timescaledb_functions.cagg_watermark(c.mat_hypertable_id)) as watermark
    from _timescaledb_catalog.continuous_agg c
    where c.user_view_schema = current_schema() and c.user_view_name = ${rollup}
  )`;
}

async function refreshWindow(connection: CommonQueryMethods, index: number, start: string | null, end: string): Promise<void> {
  const rollup = rollups[index]!;
  const lockKey = refreshLockBase + index;
  await connection.query(sql.type(noRows)`select pg_advisory_lock(${lockKey})`);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await connection.query(sql.type(noRows)`
          call refresh_continuous_aggregate(${rollup.name}::regclass, ${start}::timestamptz, ${end}::timestamptz)
        `);
        return;
      } catch (error) {
        if (attempt >= 20 || sqlState(error) !== lockNotAvailable) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
      }
    }
  } finally {
    await connection.query(sql.type(noRows)`select pg_advisory_unlock(${lockKey})`);
  }
}

function sqlState(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 4; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}
