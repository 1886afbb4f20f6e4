import assert from 'node:assert/strict';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

const rollupNames = ['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly'];

/** Each timescale rollup's watermark (the end of what it has materialised), null before any materialisation. */
export async function watermarks(db: CommonQueryMethods): Promise<Map<string, string | null>> {
  const rows = await db.any(sql.type(z.object({ rollup: z.string(), watermark: z.string().nullable() }))`
    select rollup, case when watermark < '1900-01-01' then null else watermark end as watermark
    from (
      select c.user_view_name as rollup,
        _timescaledb_functions.to_timestamp(_timescaledb_functions.cagg_watermark(c.mat_hypertable_id)) as watermark
      from _timescaledb_catalog.continuous_agg c
      where c.user_view_name = any(${sql.array(rollupNames, 'text')})
    ) w
  `);
  return new Map(rows.map((r) => [r.rollup, r.watermark]));
}

/**
 * The precondition of a backfill test on timescale: [from, to) lies below every named rollup's watermark,
 * so the rollup holds materialised buckets there that only a refresh can correct.
 */
export async function assertBelowWatermarks(db: CommonQueryMethods, to: string, rollups = ['readings_hourly', 'readings_daily']): Promise<void> {
  const marks = await watermarks(db);
  for (const rollup of rollups) {
    const mark = marks.get(rollup);
    assert.ok(mark && Date.parse(mark) >= Date.parse(to), `precondition: ${rollup}'s watermark ${mark} is at or after ${to}`);
  }
}

/** Runs every TimescaleDB job of the database in the foreground, as the production scheduler would (in job order). */
export async function runJobs(db: CommonQueryMethods, order: 'asc' | 'desc' = 'asc'): Promise<number> {
  const ids = await db.anyFirst(sql.type(z.object({ job_id: z.number() }))`
    select job_id from timescaledb_information.jobs where job_id >= 1000 order by job_id ${order === 'asc' ? sql.fragment`asc` : sql.fragment`desc`}
  `);
  for (const id of ids) await db.query(sql.type(z.object({}))`call run_job(${id})`);
  return ids.length;
}

/** Midnight UTC `days` days ago, plus `minutes`: data placed relative to now, never to a calendar date. */
export function daysAgo(days: number, minutes = 0): string {
  const midnight = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  return new Date(midnight - days * 86_400_000 + minutes * 60_000).toISOString();
}

/** Retries `check` until it passes or `withinMs` has gone; returns how long it took. */
export async function eventually(check: () => Promise<void>, withinMs: number, everyMs = 250): Promise<number> {
  const started = Date.now();
  for (;;) {
    try {
      await check();
      return Date.now() - started;
    } catch (error) {
      if (Date.now() - started > withinMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }
}
