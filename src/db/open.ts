import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { startEmbeddedPostgres } from './embedded.js';
import { resolveEngine } from './engine.js';
import { migrate } from './migrate.js';
import pg from 'pg';
import { createDb, createSlonikPool, describeUrl, poolOptionsFrom, withUtc, type Db } from './pool.js';
import { classifyDatabaseError } from './errors.js';

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
    const probe = await createSlonikPool(url, { poolSize: 1, statementTimeoutMs: config.statementTimeoutMs });
    let engine;
    try {
      engine = await resolveEngine(probe, config.engine);
    } finally {
      await probe.end();
    }
    const migrator = new pg.Pool({ connectionString: withUtc(url), max: 1 });
    try {
      const applied = await migrate(migrator, engine);
      if (applied.length > 0) log.info({ applied, engine }, 'migrations applied');
    } finally {
      await migrator.end();
    }
    const db = await createDb(url, engine, poolOptionsFrom(config, log));
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
    throw error;
  }
}

function rootMessage(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error && current.message ? current.message : String(current);
}
