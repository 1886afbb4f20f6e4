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
      const seen = await client.query<{ ids: string[] | null }>('select array_agg(id) as ids from rollup_backlog');
      await client.query('call envmon_refresh_rollups()');
      if (seen.rows[0]?.ids) await client.query('delete from rollup_backlog where id = any($1::bigint[])', [seen.rows[0].ids]);
      client.release();
    } catch (error) {
      // The connection may hold the advisory lock: end it so the lock goes with it.
      client.release(error as Error);
      throw error;
    }
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
