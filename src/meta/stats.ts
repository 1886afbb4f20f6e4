import { z } from 'zod';
import type { PgPool } from '../db/pool.js';
import { prepared } from '../db/prepared.js';

const statsRow = z.object({
  stations_total: z.number(), stations_active: z.number(),
  readings_total: z.number(), readings_ok: z.number(),
  earliest: z.string().nullable(), latest: z.string().nullable(),
  notes: z.number(), publications: z.number(), team: z.number(), research: z.number(), education: z.number(), instruments: z.number(),
});
export type StatsRow = z.infer<typeof statsRow>;

/** The reading totals of the stats, with the mark of the readings they were counted at. */
export type ReadingTotals = { mark: string; total: number; ok: number };

const statsCounts = prepared<Record<string, unknown>>('envmon_stats', `
  select
    (select count(*) from stations) as stations_total,
    (select count(*) from stations where status = 'active') as stations_active,
    (select coalesce(max(version), 0)::text || '/' || count(*) from station_latest) as mark,
    least(
      (select min(first_ts) from station_latest),
      (select min(first.ts) from station_latest l cross join lateral (
        select r.ts from readings r where r.station_id = l.station_id order by r.ts limit 1) first
       where l.first_ts is null)) as earliest,
    (select max(ts) from station_latest) as latest,
    (select count(*) from notes) as notes,
    (select count(*) from publications) as publications,
    (select count(*) from team_members) as team,
    (select count(*) from research_programmes) as research,
    (select count(*) from education_programmes) as education,
    (select count(*) from instruments) as instruments`);

const readingTotals = prepared<{ total: number; ok: number }>('envmon_reading_totals', `
  with pending as (select distinct station_id from rollup_backlog),
  rolled as (
    select coalesce(sum(n), 0)::float8 as total, coalesce(sum(n) filter (where quality_flag = 'ok'), 0)::float8 as ok
    from readings_monthly where station_id not in (select station_id from pending)
  ),
  counted as (
    select count(*)::float8 as total, (count(*) filter (where quality_flag = 'ok'))::float8 as ok
    from readings where station_id in (select station_id from pending)
  )
  select rolled.total + counted.total as total, rolled.ok + counted.ok as ok from rolled, counted`);

/**
 * Counts for /stats/, fast on any number of readings: totals from the monthly rollup, the newest and the
 * oldest reading from station_latest; never count(*) over readings. The totals are summed only when the
 * readings' mark differs from `known`'s (then known's are given again): the mark is every station's data
 * version and the number of stations with readings, which any write of the service changes in its
 * transaction, so equal marks mean equal readings. Summing the monthly rollup is the costly part on
 * timescale, where its unmaterialised tail (this month, through every level down to the last hour's
 * readings) grows with the number of stations reporting.
 */
export async function readStats(pool: PgPool, known: ReadingTotals | null): Promise<{ row: StatsRow; totals: ReadingTotals }> {
  // Prepared statements without parameters on the read pool: planning the nested real-time rollup views
  // (on timescale) costs more than running them, a prepared statement is planned once per connection, and
  // one with a parameter would be planned afresh for its first executions.
  const [stateRow] = await statsCounts.rows(pool);
  const { mark, ...row } = stateRow!;
  let totals: ReadingTotals;
  if (known && known.mark === mark) {
    totals = known;
  } else {
    // One pass over the monthly rollup for both totals: on timescale each pass computes the view's
    // unmaterialised tail through every level below it. Read after the mark, so that a write landing in
    // between is counted under the old mark, and summed again at the next request. A station whose
    // backfill still waits for its refresh (timescale: its rollups do not hold it yet) is counted from its
    // readings instead, in the same snapshot: the totals are exact without waiting for anyone's refresh.
    const summed = (await readingTotals.rows(pool))[0]!;
    totals = { mark: mark as string, total: summed.total, ok: summed.ok };
  }
  const iso = (value: unknown) => (value instanceof Date ? value.toISOString() : null);
  return {
    row: statsRow.parse({
      ...Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeof value === 'string' ? Number(value) : value])),
      readings_total: totals.total,
      readings_ok: totals.ok,
      earliest: iso(row.earliest),
      latest: iso(row.latest),
    }),
    totals,
  };
}

/** /stats/ as the API gives it. */
export function shapeStats(row: StatsRow) {
  return {
    stations: { total: row.stations_total, active: row.stations_active },
    readings: {
      total: row.readings_total,
      ok: row.readings_ok,
      ok_pct: row.readings_total === 0 ? null : Math.round((row.readings_ok / row.readings_total) * 1000) / 10,
      earliest: row.earliest,
      latest: row.latest,
    },
    content: { notes: row.notes, publications: row.publications, team: row.team, research: row.research, education: row.education, instruments: row.instruments },
    generated_at: new Date().toISOString(),
  };
}
