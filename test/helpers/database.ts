import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Engine } from '../../src/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { detectTimescale } from '../../src/db/engine.js';
import { migrate } from '../../src/db/migrate.js';
import { createSlonikPool } from '../../src/db/pool.js';

export type TestServer = {
  adminUrl: string;
  engines: Engine[];
  leftOut: string[];
  createDatabase: (engine: Engine) => Promise<string>;
  /** A database with nothing in it, not even the migrations. */
  createEmptyDatabase: () => Promise<string>;
  dropDatabase: (url: string) => Promise<void>;
  close: () => Promise<void>;
};

const run = `${process.pid}`;

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs `fn` on a connection of its own to `url`, closed afterwards. */
export async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * The PostgreSQL the suite runs against: TEST_DATABASE_URL (an admin URL) when set, else an embedded
 * server in a temporary directory. One migrated template database per engine the server offers makes
 * each suite's fresh database a cheap copy.
 */
export async function startTestServer(env: Record<string, string | undefined>): Promise<TestServer> {
  let embedded: EmbeddedPostgres | undefined;
  let tempDir: string | undefined;
  let adminUrl = env.TEST_DATABASE_URL;
  if (!adminUrl) {
    tempDir = mkdtempSync(path.join(os.tmpdir(), 'envmon-test-'));
    // The server runs as the postgres user when the tests run as root.
    chmodSync(tempDir, 0o755);
    try {
      embedded = await startEmbeddedPostgres(path.join(tempDir, 'postgres'), 54330 + (process.pid % 500));
    } catch (error) {
      rmSync(tempDir, { recursive: true, force: true });
      throw error;
    }
    adminUrl = embedded.url;
  }

  const probe = await createSlonikPool(adminUrl, { poolSize: 1, statementTimeoutMs: 10_000 });
  const timescale = await detectTimescale(probe);
  await probe.end();

  const wanted = (env.TEST_ENGINES ?? 'portable,timescale').split(',').map((e) => e.trim());
  const engines: Engine[] = [];
  const leftOut: string[] = [];
  if (wanted.includes('portable')) engines.push('portable');
  else leftOut.push('portable: not in TEST_ENGINES');
  if (!wanted.includes('timescale')) leftOut.push('timescale: not in TEST_ENGINES');
  else if (timescale.available) engines.push('timescale');
  else leftOut.push(`timescale: ${timescale.reason}`);

  const templates = new Map<Engine, string>();
  const created = new Set<string>();
  for (const engine of engines) {
    const name = `envmon_test_tpl_${engine}_${run}`;
    await admin(adminUrl, (c) => c.query(`create database ${name}`));
    created.add(name);
    const pool = new pg.Pool({ connectionString: withDatabase(adminUrl, name), max: 1 });
    try {
      await migrate(pool, engine);
    } finally {
      await pool.end();
    }
    // A template must have no sessions when it is copied; TimescaleDB's scheduler would open one.
    await admin(adminUrl, async (c) => {
      await c.query(`alter database ${name} with allow_connections false`);
      await c.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1`, [name]);
    });
    templates.set(engine, name);
  }

  let counter = 0;
  const dropByName = (name: string) =>
    admin(adminUrl, (c) => c.query(`drop database if exists ${name} with (force)`)).then(() => created.delete(name));

  return {
    adminUrl,
    engines,
    leftOut,
    createDatabase: async (engine) => {
      const name = `envmon_test_${engine}_${run}_${++counter}`;
      await admin(adminUrl, (c) => c.query(`create database ${name} template ${templates.get(engine)}`));
      created.add(name);
      return withDatabase(adminUrl, name);
    },
    createEmptyDatabase: async () => {
      const name = `envmon_test_empty_${run}_${++counter}`;
      await admin(adminUrl, (c) => c.query(`create database ${name}`));
      created.add(name);
      return withDatabase(adminUrl, name);
    },
    dropDatabase: async (url) => {
      await dropByName(new URL(url).pathname.slice(1));
    },
    close: async () => {
      for (const name of [...created]) await dropByName(name).catch(() => {});
      await embedded?.stop();
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    },
  };
}
