-- A station's interval is kept as a version whenever it is set: on the station's creation (its first)
-- and on every update that changes it.
create or replace function envmon_station_interval_version()
 returns trigger
 language plpgsql
as $function$
begin
  if tg_op = 'INSERT' or new.interval_seconds is distinct from old.interval_seconds then
    insert into station_intervals (station_id, interval_seconds) values (new.station_id, new.interval_seconds);
  end if;
  return null;
end $function$;
