import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Engine } from '../config.js';

/** Thrown when the requested engine cannot be used on this database. */
export class EngineError extends Error {}

export type TimescaleAvailability = { available: true } | { available: false; reason: string };

/** Whether this server can run the timescale engine: the extension installed and preloaded. */
export async function detectTimescale(db: CommonQueryMethods): Promise<TimescaleAvailability> {
  const row = await db.one(sql.type(
    z.object({ installed: z.boolean(), preloaded: z.boolean() }),
  )`
    select
      exists (select 1 from pg_available_extensions where name = 'timescaledb') as installed,
      current_setting('shared_preload_libraries') ~ '(^|[ ,])timescaledb($|[ ,])' as preloaded
  `);
  if (!row.installed) return { available: false, reason: 'the timescaledb extension is not installed on the server' };
  if (!row.preloaded) return { available: false, reason: "timescaledb is not in the server's shared_preload_libraries" };
  return { available: true };
}

/** The engine recorded in the database by its first migration, if any. */
export async function readRecordedEngine(db: CommonQueryMethods): Promise<Engine | null> {
  const exists = await db.oneFirst(sql.type(z.object({ exists: z.boolean() }))`
    select to_regclass('envmon_settings') is not null as exists
  `);
  if (!exists) return null;
  const value = await db.maybeOneFirst(sql.type(z.object({ value: z.enum(['timescale', 'portable']) }))`
    select value from envmon_settings where key = 'engine'
  `);
  return value;
}

/**
 * Decides the engine: the recorded one wins; otherwise the requested one, or with `auto` timescale
 * when the server offers it. Throws EngineError when the request contradicts the database or the server.
 */
export async function resolveEngine(db: CommonQueryMethods, requested: Engine | 'auto'): Promise<Engine> {
  const recorded = await readRecordedEngine(db);
  if (recorded) {
    if (requested !== 'auto' && requested !== recorded) {
      throw new EngineError(
        `DB_ENGINE=${requested} contradicts this database, which was created with the ${recorded} engine`,
      );
    }
    return recorded;
  }
  const timescale = await detectTimescale(db);
  if (requested === 'timescale' && !timescale.available) {
    throw new EngineError(`DB_ENGINE=timescale cannot be used: ${timescale.reason}`);
  }
  if (requested === 'auto') return timescale.available ? 'timescale' : 'portable';
  return requested;
}
