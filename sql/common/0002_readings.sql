-- One row per (station, timestamp). Metrics are nullable: not every station carries every sensor.
-- No foreign key to stations: the ingest path has already authenticated the station, stations are
-- never deleted, and a per-row RI check would cost a large share of bulk insert time.
create table readings (
  station_id text not null,
  ts timestamptz not null,
  temperature_c double precision,
  humidity_rh double precision,
  pressure_hpa double precision,
  altitude_m double precision,
  pm1_0 double precision,
  pm2_5 double precision,
  pm10 double precision,
  co2_ppm double precision,
  co_ppm double precision,
  uv_index double precision,
  quality_flag text not null default 'ok' check (quality_flag in ('ok', 'suspect', 'invalid')),
  firmware_version text,
  module_data jsonb,
  primary key (station_id, ts)
);
