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

export const flagFilters = [['ok'], ['suspect'], ['invalid'], ['ok', 'suspect', 'invalid']];
