import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { assertRollupExact, flagFilters, periods } from '../helpers/exactness.js';
import { addStation, makeReadings } from '../helpers/readings.js';

describeEngines('envmon rollups verify', (env) => {
  const settings = () => ({ DATABASE_URL: env().databaseUrl });

  it('finds the rollup buckets that differ from the readings, names them, and makes them again with --repair', async function () {
    this.timeout(120_000);
    const { db } = env();
    await addStation(db, 'rv-one');
    await addStation(db, 'rv-two');
    await storeReadings(db, 'rv-one', makeReadings(600, '2024-02-28T20:00:00Z', 5));
    await storeReadings(db, 'rv-two', makeReadings(300, '2024-03-10T00:00:00Z', 10));
    await db.rollups.refresh();
    const clean = await runCli(['rollups', 'verify'], settings());
    assert.equal(clean.code, 0, clean.stderr);
    for (const level of ['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly']) {
      assert.match(clean.stdout, new RegExp(`^${level}: 0 buckets differ from the readings`, 'm'));
    }

    // Rollup rows as a defect would leave them: a day's count wrong, an hour gone, a month's sum off.
    const materialised = async (rollup: string) => db.engine === 'timescale'
      ? sql.identifier(['_timescaledb_internal', await db.pool.oneFirst(sql.type(z.object({ name: z.string() }))`
          select h.table_name as name from _timescaledb_catalog.continuous_agg c
          join _timescaledb_catalog.hypertable h on h.id = c.mat_hypertable_id where c.user_view_name = ${rollup}`)])
      : sql.identifier([rollup]);
    await db.pool.query(sql.type(z.object({}))`update ${await materialised('readings_daily')} set n = n + 3 where station_id = 'rv-one' and bucket = '2024-02-29T00:00:00Z' and quality_flag = 'ok'`);
    await db.pool.query(sql.type(z.object({}))`delete from ${await materialised('readings_hourly')} where station_id = 'rv-two' and bucket = '2024-03-10T05:00:00Z' and quality_flag = 'ok'`);
    await db.pool.query(sql.type(z.object({}))`update ${await materialised('readings_monthly')} set temperature_c_sum = temperature_c_sum + 1 where station_id = 'rv-one' and bucket = '2024-03-01T00:00:00Z' and quality_flag = 'ok'`);

    const found = await runCli(['rollups', 'verify'], settings());
    assert.equal(found.code, 1, found.stdout);
    assert.match(found.stderr, /rollup buckets differ from the readings: run again with --repair/);
    assert.match(found.stdout, /^readings_daily: 1 bucket differs/m);
    assert.match(found.stdout, /rv-one 2024-02-29T00:00:00\.000Z ok: n \(rollup \d+, readings \d+\)/);
    assert.match(found.stdout, /^readings_hourly: 1 bucket differs/m);
    assert.match(found.stdout, /rv-two 2024-03-10T05:00:00\.000Z ok: missing \(rollup none, readings \d+\)/);
    assert.match(found.stdout, /^readings_monthly: 1 bucket differs/m);
    assert.match(found.stdout, /rv-one 2024-03-01T00:00:00\.000Z ok: temperature_c_sum/);
    // One station's check sees only its own buckets.
    const two = await runCli(['rollups', 'verify', '--station', 'rv-two'], settings());
    assert.equal(two.code, 1);
    assert.match(two.stdout, /^readings_daily: 0 buckets differ/m);

    const repaired = await runCli(['rollups', 'verify', '--repair'], settings());
    assert.equal(repaired.code, 0, `${repaired.stdout}\n${repaired.stderr}`);
    assert.match(repaired.stdout, /^readings_hourly: made again; 0 buckets still differ/m);
    const after = await runCli(['rollups', 'verify'], settings());
    assert.equal(after.code, 0, after.stdout);
    // The oracle of the other tests, every statistic of every level and quality filter.
    for (const station of ['rv-one', 'rv-two']) {
      for (const period of periods) for (const flags of flagFilters) await assertRollupExact(db, station, period, flags);
    }
  });

  it('names an unknown station or action and exits 2', async () => {
    const unknown = await runCli(['rollups', 'verify', '--station', 'rv-nowhere'], settings());
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /station 'rv-nowhere' does not exist/);
    const action = await runCli(['rollups', 'rebuild'], settings());
    assert.equal(action.code, 2);
    assert.match(action.stderr, /rollups takes 'verify'/);
  });
});
