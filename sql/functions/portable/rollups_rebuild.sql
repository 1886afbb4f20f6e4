-- After an update or a delete, every bucket the changed readings fall in is made again from the readings,
-- at each level. Bucket ends are computed in UTC, whatever the session's zone: across a daylight-saving
-- change a day or a week would otherwise be an hour too long or short.
create or replace function envmon_rollups_rebuild()
 returns trigger
 language plpgsql
as $function$
declare
  r record;
  touched_rows text := case tg_op
    when 'UPDATE' then 'select station_id, ts from old_rows union all select station_id, ts from new_rows'
    else 'select station_id, ts from old_rows' end;
  touched text;
begin
  for r in select * from envmon_rollup_units() loop
    touched := format('(select distinct station_id, date_trunc(%L, ts, ''UTC'') as bucket from (%s) t)', r.unit, touched_rows);
    execute format('delete from %I x using %s k where x.station_id = k.station_id and x.bucket = k.bucket',
      r.rollup, touched);
    execute format('insert into %I %s', r.rollup, envmon_rollup_select(r.unit, format(
      '(select readings.* from readings join %s k on readings.station_id = k.station_id '
      'and readings.ts >= k.bucket and readings.ts < ((k.bucket at time zone ''UTC'') + interval %L) at time zone ''UTC'') s',
      touched, '1 ' || r.unit)));
  end loop;
  return null;
end $function$;
