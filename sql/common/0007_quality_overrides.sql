-- An operator's quality override: every reading of the station within [from_ts, to_ts] carries `flag`,
-- the readings stored when it was made and those that arrive later (a late backfill from a sensor
-- declared broken stays invalid). When overrides overlap, the later one wins.
create table quality_overrides (
  id bigint generated always as identity primary key,
  station_id text not null references stations (station_id) on delete cascade,
  from_ts timestamptz not null,
  to_ts timestamptz not null,
  flag text not null check (flag in ('ok', 'suspect', 'invalid')),
  reason text not null,
  created_at timestamptz not null default now(),
  check (from_ts <= to_ts)
);

create index quality_overrides_station_idx on quality_overrides (station_id, from_ts, to_ts);
