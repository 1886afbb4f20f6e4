import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { startEmbeddedPostgres } from './embedded.js';
import { EngineError, resolveEngine } from './engine.js';
import { migrate } from './migrate.js';
import pg from 'pg';
import { createDb, createSlonikPool, describeUrl, poolOptionsFrom, withSessionSettings, type Db } from './pool.js';
import { classifyDatabaseError, sqlState } from './errors.js';

/** One line an operator can act on; main prints it and exits non-zero. */
export class StartupError extends Error {}

export type OpenDatabase = { db: Db; close: () => Promise<void> };

/**
 * Connects to DATABASE_URL, or starts the embedded PostgreSQL when it is unset; settles the engine
 * and applies pending migrations. Throws StartupError for an unreachable database or a bad engine.
 */
export async function openDatabase(config: Config, log: Logger): Promise<OpenDatabase> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), config.embeddedPort,
      () => log.warn('the embedded PostgreSQL stopped unexpectedly and was started again'));
  if (embedded?.sharedWith) log.info({ pid: embedded.sharedWith }, 'using the embedded PostgreSQL that a running envmon serves');
  const url = config.databaseUrl ?? embedded!.url;
  try {
    const db = await withStartupRetries(log, async () => {
      const probe = await createSlonikPool(url, { poolSize: 1, statementTimeoutMs: config.statementTimeoutMs });
      let engine;
      try {
        engine = await resolveEngine(probe, config.engine);
      } finally {
        await probe.end();
      }
      const migrator = new pg.Pool({ connectionString: withSessionSettings(url), max: 1 });
      // A connection the server ends (a restart, a terminated backend) is reported by the query it fails.
      migrator.on('error', () => {});
      try {
        const applied = await migrate(migrator, engine);
        if (applied.length > 0) log.info({ applied, engine }, 'migrations applied');
      } finally {
        await migrator.end();
      }
      return createDb(url, engine, poolOptionsFrom(config, log));
    });
    return {
      db,
      close: async () => {
        await db.close();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await embedded?.stop();
    if (classifyDatabaseError(error) === 'unavailable') {
      throw new StartupError(`cannot reach the database at ${describeUrl(url)}: ${rootMessage(error)}`);
    }
    const state = sqlState(error);
    if (state === '3D000') throw new StartupError(`the database ${describeUrl(url)} does not exist: create it, or set DATABASE_URL to one that does`);
    if (state === '28P01' || state === '28000') throw new StartupError(`the database at ${describeUrl(url)} refused the login: ${rootMessage(error)}`);
    throw error;
  }
}

// Errors that say no server is there at all: trying again only delays the one line the operator needs.
const unreachable = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);

const startupAttempts = 5;

/**
 * Runs the start-up steps again, from the first, when the database ended a connection under them (a
 * restart, an administrator's pg_terminate_backend): a server keeps running through the same, so
 * starting must too. A warning line per retry; at most `startupAttempts` tries, a second apart and more.
 * Migrations are each one transaction, so a step cut half-way left nothing to undo.
 */
async function withStartupRetries<T>(log: Logger, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      const retry = attempt < startupAttempts && connectionEnded(error);
      if (!retry) throw error;
      log.warn({ attempt, of: startupAttempts, reason: rootMessage(error) }, 'the database ended a connection during start-up; starting again');
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}

/**
 * Whether a start-up step failed because its connection ended: an error the database named as such (a
 * SQLSTATE of the unavailable classes), or the driver's own report of a connection it lost, which carries
 * no SQLSTATE (a terminated backend seen by a query on another step). Not a server that is not there, an
 * engine that contradicts the database, or an error the database named otherwise (a missing database, a
 * login refused, a migration's SQL).
 */
function connectionEnded(error: unknown): boolean {
  if (error instanceof EngineError || unreachable.has(socketCode(error) ?? '')) return false;
  return sqlState(error) ? classifyDatabaseError(error) === 'unavailable' : error instanceof Error;
}

function socketCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && !/^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

function rootMessage(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error && current.message ? current.message : String(current);
}
