import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Engine } from '../config.js';
import { ConnectionLostError } from './errors.js';

const sqlDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../sql');

// Any constant works; it only has to be the same for every envmon process migrating this database.
const migrationLockKey = 7_301_946_412;

export type Migration = { name: string; file: string };

/**
 * The function and procedure bodies for an engine (sql/functions/common and the engine's own), each file
 * one whole `create or replace`, in the order they are applied: shared first, then by file name.
 */
export async function listFunctions(engine: Engine): Promise<Migration[]> {
  const found: Migration[] = [];
  for (const dir of ['common', engine]) {
    const files = (await readdir(path.join(sqlDir, 'functions', dir))).filter((file) => file.endsWith('.sql')).sort();
    for (const file of files) found.push({ name: `functions/${dir}/${file}`, file: path.join(sqlDir, 'functions', dir, file) });
  }
  return found;
}

/** The migrations for an engine: shared files and the engine's own, ordered by their number. */
export async function listMigrations(engine: Engine): Promise<Migration[]> {
  const dirs = ['common', engine];
  const found: Migration[] = [];
  for (const dir of dirs) {
    for (const file of await readdir(path.join(sqlDir, dir))) {
      if (/^\d{4}_[a-z0-9_]+\.sql$/.test(file)) found.push({ name: `${dir}/${file}`, file: path.join(sqlDir, dir, file) });
    }
  }
  return found.sort((a, b) => path.basename(a.name).localeCompare(path.basename(b.name)));
}

/**
 * Applies pending migrations for `engine`, each in its own transaction, and records the engine on first run;
 * then, when the text of any function file differs from what was last applied, applies every one of them
 * again in one transaction (a function's generator may have changed under it). Migrations change tables
 * and are never edited; functions live whole in their files and are edited there.
 * Returns the names applied (empty when the database is current). Concurrent runs wait on an advisory lock;
 * the migrations-table row is inserted before the file runs, so a run that slipped past the lock collides
 * on the primary key and rolls back instead of applying a file twice.
 */
export async function migrate(pool: pg.Pool, engine: Engine): Promise<string[]> {
  const client = await pool.connect();
  // The connection ended under a query (the server restarted, the backend was terminated): what the
  // query then reports says only that the client cannot be used, so the loss itself is what is thrown.
  let lost: unknown;
  const onError = (error: unknown) => (lost ??= error);
  client.on('error', onError);
  const applied: string[] = [];
  try {
    await client.query('select pg_advisory_lock($1)', [migrationLockKey]);
    await client.query(`
      create table if not exists envmon_migrations (
        name text primary key,
        applied_at timestamptz not null default now()
      );
      create table if not exists envmon_settings (
        key text primary key,
        value text not null
      );
    `);
    await client.query(`insert into envmon_settings (key, value) values ('engine', $1) on conflict (key) do nothing`, [engine]);
    const done = new Set((await client.query<{ name: string }>('select name from envmon_migrations')).rows.map((r) => r.name));
    for (const migration of await listMigrations(engine)) {
      if (done.has(migration.name)) continue;
      const text = await readFile(migration.file, 'utf8');
      await client.query('begin');
      try {
        await client.query('insert into envmon_migrations (name) values ($1)', [migration.name]);
        await client.query(text);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback').catch(() => {});
        throw new MigrationError(migration.name, lost ? new ConnectionLostError(lost) : error);
      }
      applied.push(migration.name);
    }
    applied.push(...(await applyFunctions(client, engine)));
  } catch (error) {
    if (lost && !(error instanceof MigrationError)) throw new ConnectionLostError(lost);
    throw error;
  } finally {
    await client.query('select pg_advisory_unlock($1)', [migrationLockKey]).catch(() => {});
    client.off('error', onError);
    client.release(lost ? true : undefined);
  }
  return applied;
}

const functionsKey = 'functions_sha256';

/** Applies the engine's function files when their text changed since last applied; returns their names, or none. */
async function applyFunctions(client: pg.PoolClient, engine: Engine): Promise<string[]> {
  const files = await listFunctions(engine);
  const texts = await Promise.all(files.map((f) => readFile(f.file, 'utf8')));
  const hash = createHash('sha256');
  files.forEach((f, i) => hash.update(`${f.name}\0${texts[i]}\0`));
  const digest = hash.digest('hex');
  const recorded = await client.query<{ value: string }>('select value from envmon_settings where key = $1', [functionsKey]);
  if (recorded.rows[0]?.value === digest) return [];
  let current = files[0]?.name ?? 'functions';
  await client.query('begin');
  try {
    for (const [i, f] of files.entries()) {
      current = f.name;
      await client.query(texts[i]!);
    }
    await client.query('insert into envmon_settings (key, value) values ($1, $2) on conflict (key) do update set value = excluded.value', [functionsKey, digest]);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw new MigrationError(current, error);
  }
  return files.map((f) => f.name);
}

/** A migration file failed; carries its name and the database's message. */
export class MigrationError extends Error {
  constructor(
    readonly migration: string,
    cause: unknown,
  ) {
    super(`migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
