import pg from 'pg';
import { createPool, type DatabasePool } from 'slonik';
import type { Engine } from '../config.js';

export type Db = {
  /** Typed queries. */
  pool: DatabasePool;
  /** A small plain `pg` pool for COPY streams, which slonik does not expose. */
  copyPool: pg.Pool;
  engine: Engine;
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
};

/** Creates the slonik pool and the COPY pool; neither connects until first used. */
export async function createSlonikPool(url: string, options: PoolOptions): Promise<DatabasePool> {
  return createPool(withUtc(url), {
    maximumPoolSize: options.poolSize,
    statementTimeout: options.statementTimeoutMs,
    connectionTimeout: 5_000,
    idleTimeout: 30_000,
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
  // An idle client whose backend went away emits 'error'; the pool drops it, nothing else to do.
  pool.on('error', () => {});
  return pool;
}

export async function createDb(url: string, engine: Engine, options: PoolOptions): Promise<Db> {
  const pool = await createSlonikPool(url, options);
  const copyPool = createCopyPool(url, options.copyTimeoutMs);
  return {
    pool,
    copyPool,
    engine,
    close: async () => {
      await Promise.all([pool.end(), copyPool.end()]);
    },
  };
}

/** Every session speaks UTC so that date arithmetic in SQL never depends on the server's zone. */
function withUtc(url: string): string {
  const parsed = new URL(url);
  if (!parsed.searchParams.has('options')) parsed.searchParams.set('options', '-c TimeZone=UTC');
  return parsed.toString();
}
