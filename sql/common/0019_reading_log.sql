-- The new readings of each committed batch, for the live stream (/data/stream/): a subscriber that
-- reconnects names the last batch it received of each station, and is given every batch after it. A
-- row per batch that stored readings: the station's data version the batch left (station_latest.version,
-- now taken after the row lock of that station is held, so that a station's versions rise in the order
-- its batches commit) and the new readings' timestamps as runs: {epoch ms of the first, step in ms,
-- readings} for each run of evenly spaced ones, so that a minute's reading or a regular backlog of
-- thousands is one run, and a reading that was already stored (a re-sent or gap-filling batch) is never
-- given twice. Rows older than an hour go with the station's next batch: resuming is for dropped
-- connections, not for history, which /data/historical/ and the downloads give.
create table reading_log (
  station_id text not null,
  version bigint not null,
  logged_at timestamptz not null default now(),
  readings integer not null,
  runs bigint[] not null,
  primary key (station_id, version)
);

-- A logged batch's readings by their timestamps. Run as dynamic SQL with the values bound, so that the
-- plan knows the range and touches only its chunks on a hypertable (as envmon_latest_reading does).
create function envmon_batch_readings(station text, times timestamptz[], first_ts timestamptz, last_ts timestamptz)
returns setof readings language plpgsql stable as $$
begin
  return query execute 'select * from readings where station_id = $1 and ts >= $3 and ts <= $4 and ts = any($2) order by ts'
    using station, times, first_ts, last_ts;
end $$;
