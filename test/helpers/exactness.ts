import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../src/db/pool.js';

export const periods = ['hour', 'day', 'week', 'month'] as const;
export type Period = (typeof periods)[number];
const rollups: Record<Period, string> = { hour: 'readings_hourly', day: 'readings_daily', week: 'readings_weekly', month: 'readings_monthly' };

// Every metric the rollups keep, named here apart from the service's own list.
const metrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'];
const statRow = z.object({ bucket: z.string(), n: z.number() }).catchall(z.number().nullable());
type StatRow = z.infer<typeof statRow>;
const statNames = metrics.flatMap((m) => ['count', 'mean', 'min', 'max', 'sd'].map((s) => `${m}_${s}`));

/** The oracle: statistics straight from the raw readings, with the same UTC bucket boundaries. */
export async function rawStats(db: Db, stationId: string, period: Period, flags: string[]): Promise<readonly StatRow[]> {
  const stats = sql.join(metrics.map((m) => {
    const c = sql.identifier([m]);
    return sql.fragment`count(${c}) as ${sql.identifier([`${m}_count`])}, avg(${c}) as ${sql.identifier([`${m}_mean`])},
      min(${c}) as ${sql.identifier([`${m}_min`])}, max(${c}) as ${sql.identifier([`${m}_max`])}, stddev_samp(${c}) as ${sql.identifier([`${m}_sd`])}`;
  }), sql.fragment`, `);
  return db.pool.any(sql.type(statRow)`
    select date_trunc(${period}, ts, 'UTC') as bucket, count(*) as n, ${stats}
    from readings where station_id = ${stationId} and quality_flag = any(${sql.array(flags, 'text')})
    group by 1 order by 1
  `);
}

/**
 * The same statistics from a rollup relation, combined the way the aggregate queries combine them: the
 * standard deviation merges each row's {count, sum, M2} with PostgreSQL's own float8_combine.
 */
export async function rollupStats(db: Db, stationId: string, period: Period, flags: string[]): Promise<readonly StatRow[]> {
  const stats = sql.join(metrics.map((m) => {
    const column = (stat: string) => sql.identifier([`${m}_${stat}`]);
    const [count, sum, min, max, m2] = [column('count'), column('sum'), column('min'), column('max'), column('m2')];
    return sql.fragment`sum(${count}) as ${sql.identifier([`${m}_count`])}, sum(${sum}) / nullif(sum(${count}), 0) as ${sql.identifier([`${m}_mean`])},
      min(${min}) as ${sql.identifier([`${m}_min`])}, max(${max}) as ${sql.identifier([`${m}_max`])},
      envmon_sd_merge(array[${count}::float8, coalesce(${sum}, 0), ${m2}]) as ${sql.identifier([`${m}_sd`])}`;
  }), sql.fragment`, `);
  return db.pool.any(sql.type(statRow)`
    select bucket, sum(n) as n, ${stats}
    from ${sql.identifier([rollups[period]])}
    where station_id = ${stationId} and quality_flag = any(${sql.array(flags, 'text')})
    group by bucket order by bucket
  `);
}

export function assertClose(actual: number | null, expected: number | null, what: string, magnitude = 0): void {
  if (expected === null || actual === null) {
    assert.equal(actual, expected, what);
    return;
  }
  // Relative to the value, or to `magnitude`, the largest value it was computed from: sums in another
  // order differ by a few units in the last place of their terms, which is all of a mean near zero.
  const scale = Math.max(Math.abs(expected), magnitude, 1e-300);
  assert.ok(Math.abs(actual - expected) / scale <= 1e-9, `${what}: ${actual} differs from ${expected}`);
}

/** Asserts that the rollup for `period` equals the raw GROUP BY, bucket by bucket, for the flags: every metric's every statistic. */
export async function assertRollupExact(db: Db, stationId: string, period: Period, flags: string[]): Promise<number> {
  const [expected, actual] = await Promise.all([rawStats(db, stationId, period, flags), rollupStats(db, stationId, period, flags)]);
  assert.deepEqual(
    actual.map((r) => [r.bucket, r.n]),
    expected.map((r) => [r.bucket, r.n]),
    `${period} buckets and counts for flags ${flags.join('+')}`,
  );
  expected.forEach((e, i) => {
    const a = actual[i]!;
    for (const key of statNames) {
      const what = `${period} ${e.bucket} ${key} (flags ${flags.join('+')})`;
      if (key.endsWith('_count')) assert.equal(a[key], e[key], what);
      else if (key.endsWith('_sd')) assertSdClose(a[key] ?? null, e[key] ?? null, e[key.replace(/_sd$/, '_mean')] ?? null, what);
      else assertClose(a[key] ?? null, e[key] ?? null, what);
    }
  });
  return expected.length;
}

/**
 * A standard deviation within what the values' own magnitude allows: two exact merges of the same values
 * differ in the last digits of the values, not of their spread (a constant channel's is 0 or 1e-15).
 */
export function assertSdClose(actual: number | null, expected: number | null, mean: number | null, what: string): void {
  if (expected === null || actual === null) {
    assert.equal(actual, expected, what);
    return;
  }
  const tolerance = 1e-9 * Math.max(Math.abs(expected), 1e-4 * Math.abs(mean ?? 0), 1e-300);
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual} differs from ${expected}`);
}

export const flagFilters = [['ok'], ['suspect'], ['invalid'], ['ok', 'suspect', 'invalid']];
