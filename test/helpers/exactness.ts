import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../src/db/pool.js';
import { allMetrics, statisticsOf } from './exactStatistics.js';

export const periods = ['hour', 'day', 'week', 'month'] as const;
export type Period = (typeof periods)[number];
const rollups: Record<Period, string> = { hour: 'readings_hourly', day: 'readings_daily', week: 'readings_weekly', month: 'readings_monthly' };

const statRow = z.object({ bucket: z.string(), n: z.number() }).catchall(z.number().nullable());
type StatRow = z.infer<typeof statRow>;
const valuesRow = z.object({ bucket: z.string(), n: z.number() }).catchall(z.array(z.number().nullable()));
const statNames = allMetrics.flatMap((m) => ['count', 'mean', 'min', 'max', 'sd'].map((s) => `${m}_${s}`));

/** The oracle: statistics of the raw readings with the same UTC bucket boundaries, computed apart from the database (exactStatistics). */
export async function rawStats(db: Db, stationId: string, period: Period, flags: string[]): Promise<readonly StatRow[]> {
  const values = sql.join(allMetrics.map((m) => sql.fragment`array_agg(${sql.identifier([m])}) as ${sql.identifier([m])}`), sql.fragment`, `);
  const rows = await db.pool.any(sql.type(valuesRow)`
    select date_trunc(${period}, ts, 'UTC') as bucket, count(*) as n, ${values}
    from readings where station_id = ${stationId} and quality_flag = any(${sql.array(flags, 'text')})
    group by 1 order by 1
  `);
  return rows.map((row) => ({ bucket: row.bucket, n: row.n, ...statisticsOf(row) }) as StatRow);
}

/** The same statistics from a rollup relation, through the service's one definition of a mean and a spread (migration 0032). */
export async function rollupStats(db: Db, stationId: string, period: Period, flags: string[]): Promise<readonly StatRow[]> {
  const stats = sql.join(allMetrics.map((m) => {
    const column = (stat: string) => sql.identifier([`${m}_${stat}`]);
    const [count, sum, min, max, sumsq] = [column('count'), column('sum'), column('min'), column('max'), column('sumsq')];
    return sql.fragment`sum(${count}) as ${sql.identifier([`${m}_count`])}, envmon_mean(sum(${count}), sum(${sum})) as ${sql.identifier([`${m}_mean`])},
      min(${min}) as ${sql.identifier([`${m}_min`])}, max(${max}) as ${sql.identifier([`${m}_max`])},
      envmon_sd(sum(${count}), sum(${sum}), sum(${sumsq})) as ${sql.identifier([`${m}_sd`])}`;
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
    for (const key of statNames) assert.equal(a[key] ?? null, e[key] ?? null, `${period} ${e.bucket} ${key} (flags ${flags.join('+')})`);
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
