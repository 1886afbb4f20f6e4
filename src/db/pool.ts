import pg from 'pg';
import { createPool, type DatabasePool } from 'slonik';
import type { Logger } from 'pino';
import type { Engine } from '../config.js';
import { ConnectionLostError, classifyDatabaseError } from './errors.js';
import { gatePool } from './gate.js';
import { createRollupRefresher, noRefresh, type RollupRefresher } from './rollupRefresher.js';

export type Db = {
  /** Typed queries. */
  pool: DatabasePool;
  /** A small plain `pg` pool for COPY streams, which slonik does not expose. */
  copyPool: pg.Pool;
  engine: Engine;
  /** Keeps the timescale engine's rollups current below the horizon. */
  rollups: RollupRefresher;
  close: () => Promise<void>;
};

// Rows leave the database already in the shape the API speaks: timestamps as ISO 8601 UTC strings,
// counts and numerics as numbers (no BigInt reaches JSON), dates as YYYY-MM-DD strings.
const typeParsers = [
  { name: 'int8', parse: (value: string) => Number(value) },
  { name: 'numeric', parse: (value: string) => Number(value) },
  { name: 'date', parse: (value: string) => value },
  { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
  { name: 'timestamp', parse: (value: string) => new Date(`${value}Z`).toISOString() },
];

export type PoolOptions = {
  poolSize: number;
  statementTimeoutMs: number;
  /** How long one COPY (a download, an ingest batch) may hold its connection. */
  copyTimeoutMs?: number;
  /** Where the rollup refresher reports failures. */
  log?: Logger;
};

/** Creates the slonik pool and the COPY pool; neither connects until first used. */
export async function createSlonikPool(url: string, options: PoolOptions): Promise<DatabasePool> {
  return createPool(withUtc(url), {
    maximumPoolSize: options.poolSize,
    statementTimeout: options.statementTimeoutMs,
    connectionTimeout: 5_000,
    // Idle connections are kept: a new backend pays for loading the catalog on its first query, and a
    // service's pool is small and bounded.
    idleTimeout: 'DISABLE_TIMEOUT',
    captureStackTrace: false,
    typeParsers,
  });
}

export function createCopyPool(url: string, copyTimeoutMs?: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: withUtc(url),
    // A statement timeout bounds a COPY whatever its client does, a slow reader included.
    ...(copyTimeoutMs ? { statement_timeout: copyTimeoutMs } : {}),
    max: 4,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // A client whose backend went away emits 'error': an idle one is dropped by the pool; a checked-out
  // one fails the query in flight, and its user discards it. Unheard, the event would end the process.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => lostClients.add(client)));
  return pool;
}

const lostClients = new WeakSet<pg.ClientBase>();

/**
 * The error to throw for a failed operation on a COPY pool client: ConnectionLostError when the client's
 * connection was lost (its error was heard, or came with the failure), so that the request is answered
 * 503 (and a read retried) rather than 500; the error itself otherwise.
 */
export function copyClientError(client: pg.ClientBase, error: unknown): unknown {
  return lostClients.has(client) || classifyDatabaseError(error) === 'unavailable' ? new ConnectionLostError(error) : error;
}

// How long a request may wait for a free query connection before it is answered 503.
const poolWaitMs = 5_000;

export async function createDb(url: string, engine: Engine, options: PoolOptions): Promise<Db> {
  const slonikPool = await createSlonikPool(url, options);
  const pool = gatePool(slonikPool, options.poolSize, poolWaitMs);
  const copyPool = createCopyPool(url, options.copyTimeoutMs);
  const rollups =
    engine === 'timescale'
      ? createRollupRefresher(withUtc(url), { lockTimeoutMs: options.statementTimeoutMs, log: options.log })
      : noRefresh;
  return {
    pool,
    copyPool,
    engine,
    rollups,
    close: async () => {
      await rollups.close();
      await Promise.all([slonikPool.end(), copyPool.end()]);
    },
  };
}

/**
 * Every session speaks UTC, whatever the server's or the database's default zone, so that date
 * arithmetic in SQL (bucket ends, date filters) never depends on it. Options the URL carries are kept;
 * the zone is appended after them, so it wins.
 */
export function withUtc(url: string): string {
  const parsed = new URL(url);
  const options = parsed.searchParams.get('options');
  parsed.searchParams.set('options', options ? `${options} -c TimeZone=UTC` : '-c TimeZone=UTC');
  return parsed.toString();
}
