import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { compareParams, flagFor, numericFields, readingColumnNames, readingFields, rollupMetrics } from '../../src/readings/reading.js';
import { describeEngines } from '../helpers/app.js';

describeEngines('the one definition of a reading', (env) => {
  it('names the columns of readings, and each rolled-up field has its statistics in every rollup', async () => {
    const { db } = env();
    const columnsOf = (table: string) => db.pool.anyFirst(sql.type(z.object({ column_name: z.string() }))`
      select column_name from information_schema.columns where table_schema = 'public' and table_name = ${table} order by ordinal_position`);
    assert.deepEqual(await columnsOf('readings'), ['station_id', ...readingColumnNames, 'recorded_at']);
    for (const rollup of ['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly']) {
      const columns = await columnsOf(rollup);
      const metrics = numericFields.filter((field) => ['count', 'sum', 'min', 'max', 'sumsq'].every((stat) => columns.includes(`${field}_${stat}`)));
      assert.deepEqual(metrics, [...rollupMetrics], rollup);
    }
  });
});

describe('the plausibility flag', () => {
  it('is suspect exactly when a field with bounds lies outside them, at each bound and just past it', () => {
    for (const [index, field] of readingFields.entries()) {
      const values = numericFields.map(() => null as number | null);
      if (!('bounds' in field)) {
        values[index] = 1e9;
        assert.equal(flagFor(values), 'ok', field.name);
        continue;
      }
      const [min, max] = field.bounds;
      for (const [value, flag] of [[min, 'ok'], [max, 'ok'], [min - 0.001, 'suspect'], [max + 0.001, 'suspect']] as const) {
        values[index] = value;
        assert.equal(flagFor(values), flag, `${field.name} = ${value}`);
      }
    }
    assert.equal(flagFor(numericFields.map(() => null)), 'ok');
    assert.deepEqual([...compareParams], ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'pm10', 'co2_ppm']);
  });
});
