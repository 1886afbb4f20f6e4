-- A logged batch's readings by their timestamps. Run as dynamic SQL with the values bound, so that the
-- plan knows the range and touches only its chunks on a hypertable (as envmon_latest_reading does).
create or replace function envmon_batch_readings(station text, times timestamp with time zone[], first_ts timestamp with time zone, last_ts timestamp with time zone)
 returns setof readings
 language plpgsql
 stable
as $function$
begin
  return query execute 'select * from readings where station_id = $1 and ts >= $3 and ts <= $4 and ts = any($2) order by ts'
    using station, times, first_ts, last_ts;
end $function$;
