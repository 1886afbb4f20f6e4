-- The archive never forgets a state it served (citable data, `as_of`): each reading records when it
-- entered the archive, and a deletion and an override keep what they replaced, with when and why.
--
-- recorded_at: the start of the writing transaction, which a batch opens only once it holds its
-- station's lock (so no reading recorded before an instant can still be uncommitted once a writer of
-- the station has taken that lock after it). Readings stored before this migration count as recorded
-- since always: their entry was not kept, and a constant default leaves the table as it is.
alter table readings add column recorded_at timestamptz not null default '-infinity';
alter table readings alter column recorded_at set default now();

-- A deletion: the range, how many readings went, why, and when.
create table reading_removals (
  id bigint generated always as identity primary key,
  station_id text not null references stations (station_id) on delete cascade,
  from_ts timestamptz not null,
  to_ts timestamptz not null,
  readings integer not null,
  reason text not null,
  removed_at timestamptz not null
);
create index reading_removals_station_idx on reading_removals (station_id, removed_at);

-- The readings a deletion removed, as they were, with the deletion that removed them.
create table readings_removed (like readings);
alter table readings_removed add column removal_id bigint not null references reading_removals (id) on delete cascade,
  add column removed_at timestamptz not null;
create index readings_removed_station_ts_idx on readings_removed (station_id, ts);

-- The flag a reading carried before an override changed it, and when it changed: the flag in force at
-- an instant is that of the first replacement after it, else the reading's own. A reading is named by
-- its station, timestamp and recorded_at, as a timestamp deleted and posted again is another reading.
create table reading_flags_replaced (
  station_id text not null,
  ts timestamptz not null,
  recorded_at timestamptz not null,
  flag text not null,
  replaced_at timestamptz not null,
  override_id bigint not null references quality_overrides (id) on delete cascade
);
create index reading_flags_replaced_station_ts_idx on reading_flags_replaced (station_id, ts, replaced_at);
create index quality_overrides_station_created_idx on quality_overrides (station_id, created_at);
