-- A station's newest reading in one round trip. station_latest names its timestamp; the reading is then
-- looked up with that timestamp as a value known when the lookup is planned, so that on a hypertable
-- the plan touches one chunk (a join would plan every chunk, or prune them only at run time).
create or replace function envmon_latest_reading(station text)
 returns setof readings
 language plpgsql
 stable
as $function$
declare
  newest timestamptz;
begin
  select ts into newest from station_latest where station_id = station;
  if newest is not null then
    return query execute 'select * from readings where station_id = $1 and ts = $2' using station, newest;
  end if;
end $function$;
