import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../src/db/pool.js';

export const periods = ['hour', 'day', 'week', 'month'] as const;
export type Period = (typeof periods)[number];
const rollups: Record<Period, string> = { hour: 'readings_hourly', day: 'readings_daily', week: 'readings_weekly', month: 'readings_monthly' };

const statRow = z.object({
  bucket: z.string(),
  n: z.number(),
  t_mean: z.number().nullable(),
  t_min: z.number().nullable(),
  t_max: z.number().nullable(),
  h_mean: z.number().nullable(),
  p_mean: z.number().nullable(),
  pm_mean: z.number().nullable(),
  pm_max: z.number().nullable(),
  co2_min: z.number().nullable(),
});
type StatRow = z.infer<typeof statRow>;

/** The oracle: statistics straight from the raw readings, with the same UTC bucket boundaries. */
export async function rawStats(db: Db, stationId: string, period: Period, flags: string[]): Promise<readonly StatRow[]> {
  return db.pool.any(sql.type(statRow)`
    select date_trunc(${period}, ts, 'UTC') as bucket, count(*) as n,
      avg(temperature_c) as t_mean, min(temperature_c) as t_min, max(temperature_c) as t_max,
      avg(humidity_rh) as h_mean, avg(pressure_hpa) as p_mean, avg(pm2_5) as pm_mean, max(pm2_5) as pm_max,
      min(co2_ppm) as co2_min
    from readings where station_id = ${stationId} and quality_flag = any(${sql.array(flags, 'text')})
    group by 1 order by 1
  `);
}

/** The same statistics from a rollup relation, combined the way the aggregate queries combine them. */
export async function rollupStats(db: Db, stationId: string, period: Period, flags: string[]): Promise<readonly StatRow[]> {
  return db.pool.any(sql.type(statRow)`
    select bucket, sum(n) as n,
      sum(temperature_c_sum) / nullif(sum(temperature_c_count), 0) as t_mean,
      min(temperature_c_min) as t_min, max(temperature_c_max) as t_max,
      sum(humidity_rh_sum) / nullif(sum(humidity_rh_count), 0) as h_mean,
      sum(pressure_hpa_sum) / nullif(sum(pressure_hpa_count), 0) as p_mean,
      sum(pm2_5_sum) / nullif(sum(pm2_5_count), 0) as pm_mean, max(pm2_5_max) as pm_max,
      min(co2_ppm_min) as co2_min
    from ${sql.identifier([rollups[period]])}
    where station_id = ${stationId} and quality_flag = any(${sql.array(flags, 'text')})
    group by bucket order by bucket
  `);
}

export function assertClose(actual: number | null, expected: number | null, what: string): void {
  if (expected === null || actual === null) {
    assert.equal(actual, expected, what);
    return;
  }
  const scale = Math.max(Math.abs(expected), 1e-300);
  assert.ok(Math.abs(actual - expected) / scale <= 1e-9, `${what}: ${actual} differs from ${expected}`);
}

/** Asserts that the rollup for `period` equals the raw GROUP BY, bucket by bucket, for the flags. */
export async function assertRollupExact(db: Db, stationId: string, period: Period, flags: string[]): Promise<number> {
  const [expected, actual] = await Promise.all([rawStats(db, stationId, period, flags), rollupStats(db, stationId, period, flags)]);
  assert.deepEqual(
    actual.map((r) => [r.bucket, r.n]),
    expected.map((r) => [r.bucket, r.n]),
    `${period} buckets and counts for flags ${flags.join('+')}`,
  );
  expected.forEach((e, i) => {
    const a = actual[i]!;
    for (const key of ['t_mean', 't_min', 't_max', 'h_mean', 'p_mean', 'pm_mean', 'pm_max', 'co2_min'] as const) {
      assertClose(a[key], e[key], `${period} ${e.bucket} ${key}`);
    }
  });
  return expected.length;
}

export const flagFilters = [['ok'], ['suspect'], ['invalid'], ['ok', 'suspect', 'invalid']];
