import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { EngineError, readRecordedEngine, resolveEngine } from '../../src/db/engine.js';
import { listFunctions, listMigrations, migrate } from '../../src/db/migrate.js';
import { createDb } from '../../src/db/pool.js';
import { describeEngines } from '../helpers/app.js';
import { assertRollupExact, flagFilters, periods } from '../helpers/exactness.js';
import { testServer } from '../helpers/server.js';

const catalogSnapshot = sql.type(z.object({ item: z.string() }))`
  select format('%s.%s %s', table_name, column_name, data_type) as item
  from information_schema.columns where table_schema = 'public'
  union all select indexname || ' ' || indexdef from pg_indexes where schemaname = 'public'
  union all select tgname from pg_trigger where not tgisinternal
  order by 1
`;

describeEngines('migrations', (env) => {
  it('records every migration of the engine and the engine itself', async () => {
    const { db, engine } = env();
    const names = await db.pool.anyFirst(sql.type(z.object({ name: z.string() }))`select name from envmon_migrations order by name`);
    assert.deepEqual([...names].sort(), (await listMigrations(engine)).map((m) => m.name).sort());
    assert.equal(await readRecordedEngine(db.pool), engine);
  });

  it('changes nothing when run again, however often and however concurrently', async () => {
    const { db, databaseUrl, engine } = env();
    const before = await db.pool.anyFirst(catalogSnapshot);
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
    try {
      const runs = await Promise.all([migrate(pool, engine), migrate(pool, engine), migrate(pool, engine)]);
      assert.deepEqual(runs, [[], [], []]);
    } finally {
      await pool.end();
    }
    assert.deepEqual(await db.pool.anyFirst(catalogSnapshot), before);
  });

  it('applies the function files again when their text differs from what was applied, and not otherwise', async () => {
    const { databaseUrl, engine } = env();
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    try {
      // A database whose functions an earlier release left otherwise: one altered, the record of them stale.
      await pool.query(`create or replace function envmon_state_m2(double precision[]) returns double precision language sql immutable parallel safe strict as $$select 0::float8$$`);
      await pool.query(`update envmon_settings set value = 'from an earlier release' where key = 'functions_sha256'`);
      const applied = await migrate(pool, engine);
      assert.deepEqual(applied, (await listFunctions(engine)).map((f) => f.name));
      assert.equal((await pool.query('select envmon_state_m2(array[1, 2, 3]::float8[]) as m2')).rows[0].m2, 3);
      assert.deepEqual(await migrate(pool, engine), []);
    } finally {
      await pool.end();
    }
  });

  it('keeps the recorded engine and refuses a DB_ENGINE that contradicts it', async () => {
    const { db, engine } = env();
    assert.equal(await resolveEngine(db.pool, 'auto'), engine);
    assert.equal(await resolveEngine(db.pool, engine), engine);
    const other = engine === 'portable' ? 'timescale' : 'portable';
    await assert.rejects(resolveEngine(db.pool, other), (error: unknown) => {
      assert.ok(error instanceof EngineError);
      assert.equal(error.message, `DB_ENGINE=${other} contradicts this database, which was created with the ${engine} engine`);
      return true;
    });
  });

  it('gives the rollups the same names and columns on every engine', async () => {
    const { db } = env();
    const columns = await db.pool.anyFirst(sql.type(z.object({ c: z.string() }))`
      select table_name || '.' || column_name as c from information_schema.columns
      where table_schema = 'public' and table_name like 'readings_%ly' order by 1
    `);
    const metrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'];
    const expected = ['readings_daily', 'readings_hourly', 'readings_monthly', 'readings_weekly'].flatMap((t) =>
      ['station_id', 'bucket', 'quality_flag', 'n', ...metrics.flatMap((m) => ['count', 'sum', 'min', 'max', 'sumsq'].map((s) => `${m}_${s}`))].map(
        (c) => `${t}.${c}`,
      ),
    );
    assert.deepEqual([...columns].sort(), expected.sort());
  });
});

describeEngines('migrating a database that holds readings', (env) => {
  it('rebuilds the rollups with spread and every metric, exact against the readings', async function () {
    this.timeout(120_000);
    const { engine } = env();
    // A database of its own, migrated as it stood before the rollups held spread, then given readings.
    const url = await testServer().createEmptyDatabase();
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        await client.query(`create table envmon_migrations (name text primary key, applied_at timestamptz not null default now());
          create table envmon_settings (key text primary key, value text not null);`);
        await client.query(`insert into envmon_settings (key, value) values ('engine', $1)`, [engine]);
        for (const migration of (await listMigrations(engine)).filter((m) => path.basename(m.name) < '0016')) {
          await client.query('insert into envmon_migrations (name) values ($1)', [migration.name]);
          await client.query(await readFile(migration.file, 'utf8'));
        }
        await client.query(`insert into stations (station_id, name, location_name, altitude_m) values ('up-01', 'Upgrade', 'Test', 1)`);
        await client.query(`
          insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag)
          select 'up-01', '2025-12-20'::timestamptz + i * interval '7 minutes', 10 + (i % 40) * 0.37, 50 + (i % 11), 990 + (i % 29) * 0.1,
            case when i % 5 = 0 then null else 3.1 end, (i % 1100) * 1.3, 12.4, 400 + i % 30, 0.3, (i % 12) * 0.5,
            case when i % 13 = 0 then 'suspect' else 'ok' end
          from generate_series(0, 12000) as i`);
        if (engine === 'timescale') {
          for (const rollup of ['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly']) {
            await client.query(`call refresh_continuous_aggregate('${rollup}', null, null)`);
          }
        }
      } finally {
        client.release();
      }
      const applied = await migrate(pool, engine);
      assert.ok(applied.some((name) => name.endsWith('_rollups_spread.sql')), applied.join(', '));
      const db = await createDb(url, engine, { poolSize: 2, statementTimeoutMs: 60_000 });
      try {
        await db.rollups.refresh();
        for (const period of periods) {
          for (const flags of flagFilters) assert.ok((await assertRollupExact(db, 'up-01', period, flags)) > 0 || flags.includes('invalid'));
        }
      } finally {
        await db.close();
      }
    } finally {
      await pool.end();
      await testServer().dropDatabase(url);
    }
  });
});
