import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { EngineError, readRecordedEngine, resolveEngine } from '../../src/db/engine.js';
import { listMigrations, migrate } from '../../src/db/migrate.js';
import { describeEngines } from '../helpers/app.js';

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
    const metrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'pm10', 'co2_ppm'];
    const expected = ['readings_daily', 'readings_hourly', 'readings_monthly', 'readings_weekly'].flatMap((t) =>
      ['station_id', 'bucket', 'quality_flag', 'n', ...metrics.flatMap((m) => ['count', 'sum', 'min', 'max'].map((s) => `${m}_${s}`))].map(
        (c) => `${t}.${c}`,
      ),
    );
    assert.deepEqual([...columns].sort(), expected.sort());
  });
});
