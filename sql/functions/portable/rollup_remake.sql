-- A bucket of a rollup made again from the readings: its rows for the station deleted and summarised
-- afresh with the generator the triggers use (0018). `envmon rollups verify --repair` calls it for each
-- bucket that differs, holding the station's lock alone, so that no batch of the station writes between.
create or replace function envmon_rollup_remake(rollup text, station text, bucket_start timestamp with time zone, bucket_end timestamp with time zone)
 returns void
 language plpgsql
as $function$
declare
  unit text := case rollup when 'readings_hourly' then 'hour' when 'readings_daily' then 'day'
                           when 'readings_weekly' then 'week' when 'readings_monthly' then 'month' end;
begin
  if unit is null then
    raise exception 'no rollup named %', rollup using errcode = '22023';
  end if;
  execute format('delete from %I where station_id = $1 and bucket >= $2 and bucket < $3', rollup) using station, bucket_start, bucket_end;
  execute format('insert into %I %s', rollup, envmon_rollup_select(unit,
    format('(select * from readings where station_id = %L and ts >= %L and ts < %L) bucket_readings', station, bucket_start, bucket_end)));
end $function$;
