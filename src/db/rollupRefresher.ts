import pg from 'pg';
import type { Logger } from 'pino';

/**
 * Brings every rollup below the horizon up to date (timescale only; the portable engine's triggers keep
 * its rollup tables exact in the writing transaction).
 *
 * One refresh covers everything TimescaleDB's invalidation log records as changed, whoever wrote it,
 * so callers never say what they touched, and a refresh that failed is made good by any later one.
 * Calls coalesce: while a refresh runs, every new caller waits for the single next one, which starts
 * after their data was committed and so includes it.
 */
export type RollupRefresher = {
  /** Resolves once a refresh that started after this call has finished; rejects when it failed. */
  refresh: () => Promise<void>;
  /**
   * Asks for a refresh within `soonMs` without waiting for it: a stream of backfill batches is refreshed
   * in a few runs rather than one per batch. Failures are logged and left to healing.
   */
  refreshSoon: () => void;
  /** Resolves after the current and any requested refresh, failed or not (what a caller waits on to settle). */
  settled: () => Promise<void>;
  /** Refreshes now and then every `everyMs`, logging failures: heals whatever an earlier refresh missed. */
  startHealing: (everyMs: number) => void;
  close: () => Promise<void>;
};

export type RefresherOptions = {
  /** How long a refresh may wait for a lock (another refresh, a flag override) before it fails. */
  lockTimeoutMs: number;
  /** How long refreshSoon lets further requests gather before it refreshes. */
  soonMs?: number;
  log?: Logger;
};

const noop = async () => {};

/**
 * The session advisory lock every refresh of the rollups holds (envmon_refresh_rollups takes it too):
 * TimescaleDB refuses overlapping refreshes of one continuous aggregate.
 */
export const refreshLockKey = 7301946500;

export function createRollupRefresher(url: string, options: RefresherOptions): RollupRefresher {
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    application_name: 'envmon rollup refresh',
    lock_timeout: options.lockTimeoutMs,
    // A station-year's backfill takes seconds; this only bounds a refresh that is stuck.
    statement_timeout: 600_000,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 60_000,
  });
  // A backend ended under a checked-out client makes it emit 'error'; the refresh then fails and is retried.
  pool.on('connect', (client) => client.on('error', () => {}));
  pool.on('error', () => {});

  const runOnce = async () => {
    const client = await pool.connect();
    try {
      // The backlog rows committed before the refresh starts are covered by it, and only those are cleared.
      const seen = (await client.query<{ id: string; station_id: string; first_ts: Date }>('select id, station_id, first_ts from rollup_backlog')).rows;
      await client.query('call envmon_refresh_rollups()');
      const unchecked = await checkMonths(client, seen);
      // A station left for the next refresh keeps its rows, and with them the first month it must check.
      const done = seen.filter((row) => !unchecked.has(row.station_id));
      if (done.length > 0) await client.query('delete from rollup_backlog where id = any($1::bigint[])', [done.map((row) => row.id)]);
      client.release();
    } catch (error) {
      // The connection may hold the advisory lock: end it so the lock goes with it.
      client.release(error as Error);
      throw error;
    }
  };

  /**
   * The cheap form of `envmon rollups verify`, for what a refresh has just taken in: the monthly level (the
   * one whose refresh TimescaleDB can skip) of each backfilled station, from the backfill's first month,
   * against its readings. Only months the refresh materialised are checked (later ones are computed from
   * the levels below when read), and only while no newer backfill of the station waits for the next
   * refresh, in the same snapshot: that one's readings are in no rollup yet. A month that still differs
   * is logged and refreshed again with force. Returns the stations left for the next refresh.
   */
  const checkMonths = async (client: pg.PoolClient, seen: readonly { id: string; station_id: string; first_ts: Date }[]): Promise<Set<string>> => {
    const unchecked = new Set<string>();
    const since = new Map<string, Date>();
    for (const row of seen) if (!since.has(row.station_id) || row.first_ts < since.get(row.station_id)!) since.set(row.station_id, row.first_ts);
    const lastSeen = seen.reduce((max, row) => (BigInt(row.id) > max ? BigInt(row.id) : max), 0n);
    for (const [station, first] of since) {
      // A newer backfill waits: the next refresh checks the station (and the statement below would skip it too).
      const newer = await client.query('select 1 from rollup_backlog where station_id = $1 and id > $2 limit 1', [station, lastSeen.toString()]);
      if (newer.rowCount) {
        unchecked.add(station);
        continue;
      }
      const months = (await client.query<{ bucket: Date }>(`
        select distinct d.bucket from envmon_rollup_differences('readings_monthly', $1, $2) d
        where d.bucket < time_bucket(interval '1 month', envmon_rollup_horizon())
          and not exists (select 1 from rollup_backlog b where b.station_id = $1 and b.id > $3)
        order by 1`, [station, first, lastSeen.toString()])).rows;
      if (months.length === 0) continue;
      options.log?.error({ station, months: months.map((m) => m.bucket.toISOString()) }, 'monthly rollup differed from the readings after a refresh; refreshing those months again');
      await client.query('select pg_advisory_lock($1)', [refreshLockKey]);
      try {
        for (const { bucket } of months) {
          await client.query(`call refresh_continuous_aggregate('readings_monthly', $1::timestamptz, $1::timestamptz + interval '1 month', force => true)`, [bucket]);
        }
      } finally {
        await client.query('select pg_advisory_unlock($1)', [refreshLockKey]);
      }
    }
    return unchecked;
  };

  let current: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  const refresh = (): Promise<void> => {
    if (!current) {
      current = runOnce().finally(() => {
        current = null;
      });
      return current;
    }
    next ??= current
      .catch(() => {})
      .then(() => {
        next = null;
        return refresh();
      });
    return next;
  };

  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const heal = () => {
    if (closed) return;
    refresh().catch((error: unknown) => options.log?.warn({ err: error }, 'refreshing the rollups failed; retried at the next tick'));
  };
  let soon: NodeJS.Timeout | undefined;
  return {
    refresh,
    refreshSoon: () => {
      if (soon || closed) return;
      soon = setTimeout(() => {
        soon = undefined;
        heal();
      }, options.soonMs ?? 200);
    },
    settled: async () => {
      await Promise.allSettled([current, next]);
    },
    startHealing: (everyMs) => {
      heal();
      timer = setInterval(heal, everyMs);
      timer.unref();
    },
    close: async () => {
      closed = true;
      clearInterval(timer);
      clearTimeout(soon);
      await Promise.allSettled([current, next]);
      await pool.end();
    },
  };
}

/** The portable engine's: nothing to refresh. */
export const noRefresh: RollupRefresher = { refresh: noop, refreshSoon: () => {}, settled: noop, startHealing: () => {}, close: noop };
