import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

const changeRow = z.object({
  kind: z.enum(['backfill', 'override', 'deletion']),
  station: z.string(),
  at: z.string(),
  first: z.string(),
  last: z.string(),
  count: z.number().nullable(),
  flag: z.string().nullable(),
  reason: z.string().nullable(),
});
export type Change = z.infer<typeof changeRow>;

/** A change as the API gives it: a backfill's timestamps are first and last, a range's from and to. */
function shapeChange({ kind, station, at, first, last, count, flag, reason }: Change) {
  if (kind === 'backfill') return { kind, station, at, first, last, count };
  if (kind === 'override') return { kind, station, at, from: first, to: last, flag, reason };
  return { kind, station, at, from: first, to: last, count, reason };
}

const newRow = z.object({ count: z.number(), first: z.string().nullable(), last: z.string().nullable() });

/** A range of readings' timestamps (ISO instants; null for an open end): what a change must touch to count. */
export type Span = { start: string | null; end: string | null };

/**
 * What changed in the archive of `stations` after `since`, oldest change first, each with when:
 * - backfill: readings of instants up to `since` that entered it after `since`, per batch (its first and
 *   last timestamp, how many);
 * - override: an operator's flag for a range, with its reason;
 * - deletion: readings removed from a range (how many), with its reason.
 * Also the readings of instants after `since` that entered it since (the archive growing, which changes
 * no earlier answer). With `span`, only what touches its range of timestamps.
 */
export async function listChanges(db: CommonQueryMethods, stations: readonly string[], since: string, span: Span = { start: null, end: null }) {
  const ids = sql.array([...stations], 'text');
  const start = span.start ?? '-infinity';
  const end = span.end ?? 'infinity';
  const changes = await db.any(sql.type(changeRow)`
    select * from (
      select 'backfill' as kind, station_id as station, to_char(recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at, to_char(min(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as first, to_char(max(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last,
             count(*)::int as count, null as flag, null as reason, recorded_at as sort_at
      from readings
      where station_id = any(${ids}) and recorded_at > ${since}::timestamptz and ts <= ${since}::timestamptz
        and ts >= ${start}::timestamptz and ts < ${end}::timestamptz
      group by station_id, recorded_at
      union all
      select 'override', station_id, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(from_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(to_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), null, flag, reason, created_at
      from quality_overrides
      where station_id = any(${ids}) and created_at > ${since}::timestamptz and to_ts >= ${start}::timestamptz and from_ts < ${end}::timestamptz
      union all
      select 'deletion', station_id, to_char(removed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(from_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(to_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), readings, null, reason, removed_at
      from reading_removals
      where station_id = any(${ids}) and removed_at > ${since}::timestamptz and to_ts >= ${start}::timestamptz and from_ts < ${end}::timestamptz
    ) changes
    order by sort_at, kind, station`);
  const added = await db.one(sql.type(newRow)`
    select count(*)::int as count, to_char(min(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as first, to_char(max(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last
    from readings
    where station_id = any(${ids}) and recorded_at > ${since}::timestamptz and ts > ${since}::timestamptz
      and ts >= ${start}::timestamptz and ts < ${end}::timestamptz`);
  return { changes: changes.map(shapeChange), added };
}
