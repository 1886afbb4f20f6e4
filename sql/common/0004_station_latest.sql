-- Each station's newest reading time, kept by the readings store in the writing transaction.
-- On a hypertable "order by ts desc limit 1" plans across every chunk (milliseconds per query);
-- a lookup by an exact timestamp is pruned to one chunk at plan time.
create table station_latest (
  station_id text primary key,
  ts timestamptz not null
);

insert into station_latest (station_id, ts)
select station_id, max(ts) from readings group by station_id;
