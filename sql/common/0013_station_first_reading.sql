-- Each station's oldest reading time beside its newest, kept by the same writes: /stats/ finds the
-- earliest reading of all stations here, rather than looking up every station's first reading (a
-- lookup per station in the oldest chunk of a hypertable, decompressing it in the columnstore).
-- Null for a row written behind the service's back, which /stats/ then looks up as before.
alter table station_latest add column first_ts timestamptz;
update station_latest l set first_ts = (select min(ts) from readings r where r.station_id = l.station_id);
