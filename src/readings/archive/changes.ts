import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

const changeRow = z.object({
  kind: z.enum(['backfill', 'override', 'deletion', 'qc_config', 'interval']),
  station: z.string(),
  at: z.string(),
  first: z.string(),
  last: z.string(),
  count: z.number().nullable(),
  flag: z.string().nullable(),
  reason: z.string().nullable(),
  config: z.enum(['station', 'default']).nullable(),
  interval_seconds: z.number().nullable(),
  previous_interval_seconds: z.number().nullable(),
});
export type Change = z.infer<typeof changeRow>;

/**
 * A change as the API gives it: a backfill's timestamps are first and last, a range's from and to; a
 * setting's change says what is in force from `at` on.
 */
function shapeChange({ kind, station, at, first, last, count, flag, reason, config, interval_seconds, previous_interval_seconds }: Change) {
  if (kind === 'backfill') return { kind, station, at, first, last, count };
  if (kind === 'override') return { kind, station, at, from: first, to: last, flag, reason };
  if (kind === 'qc_config') return { kind, station, at, config, ...(reason === null ? {} : { reason }) };
  if (kind === 'interval') return { kind, station, at, interval_seconds, previous_interval_seconds };
  return { kind, station, at, from: first, to: last, count, reason };
}

const newRow = z.object({ count: z.number(), first: z.string().nullable(), last: z.string().nullable() });

/** A range of readings' timestamps (ISO instants; null for an open end): what a change must touch to count. */
export type Span = { start: string | null; end: string | null };

/** Which changes of a station's settings to list: those an answer depends on. */
export type Settings = { qc: boolean; interval: boolean };

/**
 * What changed in the archive of `stations` after `since`, oldest change first, each with when:
 * - backfill: readings of instants up to `since` that entered it after `since`, per batch (its first and
 *   last timestamp, how many);
 * - override: an operator's flag for a range, with its reason;
 * - deletion: readings removed from a range (how many), with its reason;
 * - qc_config: the station's quality-control configuration set (its own, or the defaults again), with its
 *   reason when one was given;
 * - interval: the station's reporting interval changed (a station's first interval is none).
 * Also the readings of instants after `since` that entered it since (the archive growing, which changes
 * no earlier answer). With `span`, only the readings' changes that touch its range of timestamps (a
 * setting applies to every range); with `settings`, only the settings named.
 */
export async function listChanges(
  db: CommonQueryMethods, stations: readonly string[], since: string, span: Span = { start: null, end: null }, settings: Settings = { qc: true, interval: true },
) {
  const ids = sql.array([...stations], 'text');
  const start = span.start ?? '-infinity';
  const end = span.end ?? 'infinity';
  const changes = await db.any(sql.type(changeRow)`
    select * from (
      select 'backfill' as kind, station_id as station, to_char(recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at, to_char(min(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as first, to_char(max(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last,
             count(*)::int as count, null as flag, null as reason, null as config, null::int as interval_seconds, null::int as previous_interval_seconds, recorded_at as sort_at
      from readings
      where station_id = any(${ids}) and recorded_at > ${since}::timestamptz and ts <= ${since}::timestamptz
        and ts >= ${start}::timestamptz and ts < ${end}::timestamptz
      group by station_id, recorded_at
      union all
      select 'override', station_id, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(from_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(to_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), null, flag, reason, null, null, null, created_at
      from quality_overrides
      where station_id = any(${ids}) and created_at > ${since}::timestamptz and to_ts >= ${start}::timestamptz and from_ts < ${end}::timestamptz
      union all
      select 'deletion', station_id, to_char(removed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(from_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(to_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), readings, null, reason, null, null, null, removed_at
      from reading_removals
      where station_id = any(${ids}) and removed_at > ${since}::timestamptz and to_ts >= ${start}::timestamptz and from_ts < ${end}::timestamptz
      union all
      select 'qc_config', station_id, to_char(set_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), null, null, null, null, reason,
             case when config is null then 'default' else 'station' end, null, null, set_at
      from qc_configs
      where ${settings.qc} and station_id = any(${ids}) and set_at > ${since}::timestamptz
      union all
      select 'interval', station_id, to_char(set_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), null, null, null, null, null, null, interval_seconds, previous, set_at
      from (
        -- The interval before each, from the whole history: a station's first has none, and is no change.
        select station_id, set_at, interval_seconds, lag(interval_seconds) over (partition by station_id order by set_at) as previous
        from station_intervals
        where ${settings.interval} and station_id = any(${ids})
      ) versions
      where set_at > ${since}::timestamptz and previous is not null
    ) changes
    order by sort_at, kind, station`);
  const added = await db.one(sql.type(newRow)`
    select count(*)::int as count, to_char(min(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as first, to_char(max(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last
    from readings
    where station_id = any(${ids}) and recorded_at > ${since}::timestamptz and ts > ${since}::timestamptz
      and ts >= ${start}::timestamptz and ts < ${end}::timestamptz`);
  return { changes: changes.map(shapeChange), added };
}
