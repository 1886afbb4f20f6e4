-- Every interval a station has reported at, from when: coverage depends on it, so a change of it changes
-- earlier answers, and the change log says when. Written by a trigger on stations, whatever writes them;
-- a station's first row is its interval from the start, not a change.
create table station_intervals (
  station_id text not null references stations (station_id) on delete cascade,
  set_at timestamptz not null default clock_timestamp(),
  interval_seconds integer not null,
  primary key (station_id, set_at)
);

-- What the stations report at now, as their first interval: earlier changes were not kept.
insert into station_intervals (station_id, set_at, interval_seconds)
select station_id, created_at, interval_seconds from stations;

create function envmon_station_interval_version() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' or new.interval_seconds is distinct from old.interval_seconds then
    insert into station_intervals (station_id, interval_seconds) values (new.station_id, new.interval_seconds);
  end if;
  return null;
end $$;

create trigger stations_interval_version after insert or update of interval_seconds on stations
  for each row execute function envmon_station_interval_version();
