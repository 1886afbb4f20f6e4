import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { sqlState } from '../db/errors.js';
import type { Db } from '../db/pool.js';

// The timescale engine's rollups, finest first: each is a continuous aggregate on the one before.
const rollups = [
  { name: 'readings_hourly', width: '1 hour' },
  { name: 'readings_daily', width: '1 day' },
  { name: 'readings_weekly', width: '1 week' },
  { name: 'readings_monthly', width: '1 month' },
] as const;

// TimescaleDB refuses a refresh whose range overlaps one in progress (55P03), and stations posting the
// same minute always overlap. A whole refresh sequence (reading the watermarks, then refreshing level by
// level) therefore holds one session advisory lock shared by every process on the database; 55P03 can
// still come from a policy job, and is retried.
const refreshLock = 7_301_946_500;
const lockNotAvailable = '55P03';

const noRows = z.object({});
const levelRow = z.object({
  rollup: z.string(),
  start: z.string(),
  end: z.string(),
  watermark: z.string().nullable(),
});

type Window = { start: number; end: number };

/**
 * Makes the rollups exact after readings between `first` and `last` were written (timescale only; the
 * portable engine's triggers did it in the writing transaction).
 *
 * Above a rollup's watermark (the end of what it has materialised) real-time aggregation reads the level
 * below, so new data there is already counted: that is where live readings land, and they cost one query.
 * Below it the materialised buckets are stale until refreshed. A daily, weekly or monthly bucket is
 * materialised from the materialised hours or days below it, so before a level is refreshed the levels
 * below are refreshed over the same span: otherwise a day materialised while its later hours were still
 * real-time would miss readings that arrive in those hours. Each window starts at or below its level's
 * watermark, so no window leaves unmaterialised buckets behind it, and a level's own window never passes
 * its watermark.
 */
export async function refreshRollups(db: Db, first: string, last: string): Promise<void> {
  if (db.engine !== 'timescale') return;
  await withRefreshLock(db, async (connection) => {
    const levels = await connection.any(sql.type(levelRow)`
      select l.rollup,
        time_bucket(l.width::interval, ${first}::timestamptz) as start,
        time_bucket(l.width::interval, ${last}::timestamptz) + l.width::interval as end,
        case when w.watermark < '1900-01-01' then null else w.watermark end as watermark
      from (values ${sql.join(rollups.map((r, i) => sql.fragment`(${r.name}, ${r.width}, ${i})`), sql.fragment`, `)}) as l (rollup, width, position)
      cross join lateral ${watermark(sql.fragment`l.rollup`)} w
      order by l.position
    `);
    const at = (name: string) => levels.find((l) => l.rollup === name)!;
    const ms = (iso: string | null) => (iso === null ? -Infinity : Date.parse(iso));
    // A level's own need: the touched buckets below its watermark, capped at it.
    const own = (name: string): Window | null => {
      const level = at(name);
      const w = ms(level.watermark);
      return ms(first) < w ? { start: ms(level.start), end: Math.min(ms(level.end), w) } : null;
    };
    const union = (...windows: (Window | null)[]): Window | null =>
      windows.reduce<Window | null>((u, x) => (!x ? u : !u ? x : { start: Math.min(u.start, x.start), end: Math.max(u.end, x.end) }), null);
    // Extended down to the level's watermark when it reaches past it, so that nothing is skipped.
    const contiguous = (name: string, window: Window | null): Window | null => {
      if (!window) return null;
      const w = ms(at(name).watermark);
      return window.end > w && w !== -Infinity ? { start: Math.min(window.start, w), end: window.end } : window;
    };
    const weekly = own('readings_weekly');
    const monthly = own('readings_monthly');
    const daily = contiguous('readings_daily', union(own('readings_daily'), weekly, monthly));
    const hourly = contiguous('readings_hourly', union(own('readings_hourly'), daily));
    const plan: [number, Window | null][] = [[0, hourly], [1, daily], [2, weekly], [3, monthly]];
    for (const [index, window] of plan) {
      if (window) await refreshWindow(connection, index, new Date(window.start).toISOString(), new Date(window.end).toISOString());
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
  await withRefreshLock(db, async (connection) => {
    for (const [index, rollup] of rollups.entries()) {
      const window = await connection.maybeOne(sql.type(windowRow)`
        select case when w.watermark < '1900-01-01' then null else w.watermark end as start,
               time_bucket(${rollup.width}::interval, now()) as end
        from ${watermark(sql.fragment`${rollup.name}`)} w
        where w.watermark < time_bucket(${rollup.width}::interval, now())
      `);
      if (window) await refreshWindow(connection, index, window.start, window.end);
    }
  });
}

const windowRow = z.object({ start: z.string().nullable(), end: z.string() });

async function withRefreshLock(db: Db, work: (connection: CommonQueryMethods) => Promise<void>): Promise<void> {
  await db.pool.connect(async (connection) => {
    await connection.query(sql.type(noRows)`select pg_advisory_lock(${refreshLock})`);
    try {
      await work(connection);
    } finally {
      await connection.query(sql.type(noRows)`select pg_advisory_unlock(${refreshLock})`);
    }
  });
}

/** The rollup's watermark, as a one-row relation `w(watermark)`; before any materialisation it is the minimum timestamp. */
function watermark(rollup: FragmentSqlToken) {
  return sql.fragment`(
    select _timescaledb_functions.to_timestamp(_timescaledb_functions.cagg_watermark(c.mat_hypertable_id)) as watermark
    from _timescaledb_catalog.continuous_agg c
    where c.user_view_schema = current_schema() and c.user_view_name = ${rollup}
  )`;
}

async function refreshWindow(connection: CommonQueryMethods, index: number, start: string | null, end: string): Promise<void> {
  const rollup = rollups[index]!;
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
}
