import pg from 'pg';
import './clientErrors.js';
import { createPool, type DatabasePool } from 'slonik';
import type { Logger } from 'pino';
import type { Config, Engine } from '../config.js';
import { ConnectionLostError, classifyDatabaseError } from './errors.js';
import { createGate, createGatedPool } from './gate.js';
import { createListener, type ListenHandlers, type Listener } from './listener.js';
import { createReadRouting, type ReadRouting } from './replicas.js';
import { createRollupRefresher, noRefresh, type RollupRefresher } from './rollupRefresher.js';
import type { PgPool } from './pgPool.js';

export type Db = {
  /** Typed queries. */
  pool: DatabasePool;
  /** Connections of `pool`. */
  poolSize: number;
  /** Ingest's own connections (COPY into readings): never taken by reads or downloads. */
  ingestPool: PgPool;
  /** Downloads' connections (COPY to the client), each bounded by DOWNLOAD_TIMEOUT_MS. */
  streamPool: PgPool;
  /** The hot reads' connections (latest, aggregates), beside those of `pool`. */
  readPool: PgPool;
  engine: Engine;
  /** Keeps the timescale engine's rollups current below the horizon. */
  rollups: RollupRefresher;
  /** Heavy reads (downloads, histories, aggregates) on a current read replica, or on the primary. */
  replicas: ReadRouting;
  /** Listens for notifications on `channel` on a connection of its own, kept open across failures. */
  listen: (channel: string, handlers: ListenHandlers) => Listener;
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
  /** How long one download (a COPY to the client) may hold its connection. */
  copyTimeoutMs?: number;
  ingestPoolSize?: number;
  streamPoolSize?: number;
  /** Streaming replicas of `url` (DATABASE_READ_URL), and how far behind one may be and still serve reads. */
  readUrls?: string[];
  replicaMaxLagSeconds?: number;
  /** Where the rollup refresher and the replica monitor report. */
  log?: Logger;
};

/** The service's pool options, from its settings: one place for the server and the tests. */
export function poolOptionsFrom(config: Config, log?: Logger): PoolOptions {
  return {
    poolSize: config.poolSize,
    statementTimeoutMs: config.statementTimeoutMs,
    copyTimeoutMs: config.downloadTimeoutMs,
    ingestPoolSize: config.ingestPoolSize,
    streamPoolSize: config.streamPoolSize,
    readUrls: config.readUrls,
    replicaMaxLagSeconds: config.replicaMaxLagSeconds,
    log,
  };
}

/** Creates the slonik pool and the COPY pool; neither connects until first used. */
export async function createSlonikPool(url: string, options: PoolOptions): Promise<DatabasePool> {
  return createPool(withSessionSettings(url), {
    maximumPoolSize: options.poolSize,
    statementTimeout: options.statementTimeoutMs,
    connectionTimeout: 5_000,
    // Idle connections are kept: a new backend pays for loading the catalog on its first query, and a
    // service's pool is small and bounded.
    idleTimeout: 'DISABLE_TIMEOUT',
    captureStackTrace: false,
    // How long ending a connection waits for its query: beyond it the connection counts as stuck.
    gracefulTerminationTimeout: 1_000,
    typeParsers,
  });
}

const lostClients = new WeakSet<pg.ClientBase>();

export type { PgPool };

export function createPgPool(url: string, options: { size: number; waitMs: number; statementTimeoutMs?: number; name: string }): PgPool {
  const pool = new pg.Pool({
    connectionString: withSessionSettings(url),
    application_name: options.name,
    // A statement timeout bounds a COPY on the database side, whatever its client does.
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    // One more than the gate lets through, for the cancel query of an abandoned download.
    max: options.size + 1,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // A client whose backend went away emits 'error': an idle one is dropped by the pool; a checked-out
  // one fails the query in flight, and its user discards it. Unheard, the event would end the process.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => lostClients.add(client)));
  const gate = createGate(options.size, options.waitMs);
  let busy = 0;
  // A client of the pool, holding a place of the gate already taken.
  const checkOut = async () => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      gate.release();
      throw error;
    }
    busy++;
    const release = client.release.bind(client);
    let released = false;
    client.release = (error?: Error | boolean) => {
      if (released) return;
      released = true;
      busy--;
      gate.release();
      release(error);
    };
    return client;
  };
  const self: PgPool = {
    connect: async () => {
      await gate.acquire();
      return checkOut();
    },
    connectIfFree: () => (gate.tryAcquire(Math.floor(options.size / 2)) ? checkOut() : null),
    query: (text, values) => pool.query(text, values),
    read: async <R extends pg.QueryResultRow>(config: pg.QueryConfig) => {
      const client = await self.connect();
      try {
        const result = await client.query<R>(config);
        client.release();
        return result;
      } catch (error) {
        client.release(error as Error);
        throw copyClientError(client, error);
      }
    },
    busy: () => busy,
    end: () => pool.end(),
  };
  return self;
}

/**
 * The error to throw for a failed operation on a COPY pool client: ConnectionLostError when the client's
 * connection was lost (its error was heard, or came with the failure), so that the request is answered
 * 503 (and a read retried) rather than 500; the error itself otherwise.
 */
export function copyClientError(client: pg.ClientBase, error: unknown): unknown {
  return lostClients.has(client) || classifyDatabaseError(error) === 'unavailable' ? new ConnectionLostError(error) : error;
}

// How long a request may wait for a free connection before it is answered 503: a query or an ingest
// waits briefly; a download, which holds its connection for long, a little longer.
const poolWaitMs = 5_000;
const streamWaitMs = 15_000;

export async function createDb(url: string, engine: Engine, options: PoolOptions): Promise<Db> {
  const gated = createGatedPool(() => createSlonikPool(url, options), await createSlonikPool(url, options), {
    size: options.poolSize,
    waitMs: poolWaitMs,
    // Past the statement timeout the database has cancelled the query; a call still pending is stuck.
    callMs: options.statementTimeoutMs + 5_000,
  });
  const pool = gated.pool;
  const ingestPool = createPgPool(url, { size: options.ingestPoolSize ?? 4, waitMs: poolWaitMs, name: 'envmon ingest' });
  const readPools = (from: string, name: string) => ({
    streamPool: createPgPool(from, {
      size: options.streamPoolSize ?? 4,
      waitMs: streamWaitMs,
      statementTimeoutMs: options.copyTimeoutMs,
      name: `envmon download${name}`,
    }),
    readPool: createPgPool(withSettings(from, readSettings), {
      size: options.poolSize,
      waitMs: poolWaitMs,
      statementTimeoutMs: options.statementTimeoutMs,
      name: `envmon reads${name}`,
    }),
  });
  const { streamPool, readPool } = readPools(url, '');
  const replicas = createReadRouting(
    { readPool, streamPool },
    (options.readUrls ?? []).map((replicaUrl) => ({ name: describeUrl(replicaUrl), ...readPools(replicaUrl, ' (replica)') })),
    { maxLagSeconds: options.replicaMaxLagSeconds ?? 5, log: options.log },
  );
  const rollups =
    engine === 'timescale'
      ? createRollupRefresher(withSessionSettings(url), { lockTimeoutMs: options.statementTimeoutMs, log: options.log })
      : noRefresh;
  return {
    pool,
    poolSize: options.poolSize,
    ingestPool,
    streamPool,
    readPool,
    engine,
    rollups,
    replicas,
    listen: (channel, handlers) => createListener(withSessionSettings(url), channel, handlers, options.log),
    close: async () => {
      await rollups.close();
      await replicas.close();
      await Promise.all([gated.close(), ingestPool.end(), streamPool.end(), readPool.end()]);
    },
  };
}

/** host:port/database of a URL: what logs and /health/ name a server by, never its credentials. */
export function describeUrl(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || 5432}${u.pathname}`;
}

/**
 * The settings of every session, appended after the options the URL carries, so that they win:
 * - UTC, whatever the server's or the database's default zone, so that date arithmetic in SQL (bucket
 *   ends, date filters) never depends on it;
 * - doubles printed in their shortest exact form (PostgreSQL's default, pinned: a snapshot's bytes must not
 *   change with a server's setting);
 * - no JIT compilation: a read as of an instant looks up a replaced flag per reading, which the planner
 *   prices far above jit_above_cost however few there are, and compiling then costs more than the read.
 */
export function withSessionSettings(url: string): string {
  return withSettings(url, { TimeZone: 'UTC', jit: 'off', extra_float_digits: '1' });
}

/** The URL with session settings appended to those it carries (which they override). */
function withSettings(url: string, settings: Record<string, string>): string {
  const parsed = new URL(url);
  const given = parsed.searchParams.get('options');
  const added = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`).join(' ');
  parsed.searchParams.set('options', given ? `${given} ${added}` : added);
  return parsed.toString();
}

/**
 * The read pool runs only per-station reads of a few thousand rollup rows, whose groups are cheapest
 * sorted (half the time of hashing on portable, where they arrive in key order) and on one core (a
 * parallel plan's start-up costs more than it saves); measured in bench/paths.
 */
const readSettings = { enable_hashagg: 'off', max_parallel_workers_per_gather: '0' };
