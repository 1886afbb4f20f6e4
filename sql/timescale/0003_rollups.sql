-- The timescale engine: readings become a hypertable; the rollups are hierarchical continuous
-- aggregates (hourly on readings, daily on hourly, weekly and monthly on daily) with the same
-- names and columns as the portable engine's tables, so that every read query is the same.
-- Real-time aggregation is on: buckets past the materialised watermark are computed from raw rows.
-- Correctness never rests on the refresh policies below: the readings store refreshes exactly the
-- buckets a write touched before it returns. The policies only keep materialisation current.
create extension if not exists timescaledb;

select create_hypertable('readings', by_range('ts', interval '7 days'));

create materialized view readings_hourly
with (timescaledb.continuous, timescaledb.materialized_only = false) as
select
  station_id,
  time_bucket(interval '1 hour', ts) as bucket,
  quality_flag,
  count(*) as n,
  count(temperature_c) as temperature_c_count, sum(temperature_c) as temperature_c_sum,
  min(temperature_c) as temperature_c_min, max(temperature_c) as temperature_c_max,
  count(humidity_rh) as humidity_rh_count, sum(humidity_rh) as humidity_rh_sum,
  min(humidity_rh) as humidity_rh_min, max(humidity_rh) as humidity_rh_max,
  count(pressure_hpa) as pressure_hpa_count, sum(pressure_hpa) as pressure_hpa_sum,
  min(pressure_hpa) as pressure_hpa_min, max(pressure_hpa) as pressure_hpa_max,
  count(pm2_5) as pm2_5_count, sum(pm2_5) as pm2_5_sum, min(pm2_5) as pm2_5_min, max(pm2_5) as pm2_5_max,
  count(pm10) as pm10_count, sum(pm10) as pm10_sum, min(pm10) as pm10_min, max(pm10) as pm10_max,
  count(co2_ppm) as co2_ppm_count, sum(co2_ppm) as co2_ppm_sum, min(co2_ppm) as co2_ppm_min, max(co2_ppm) as co2_ppm_max
from readings
group by station_id, bucket, quality_flag
with no data;

create materialized view readings_daily
with (timescaledb.continuous, timescaledb.materialized_only = false) as
select
  station_id,
  time_bucket(interval '1 day', bucket) as bucket,
  quality_flag,
  sum(n)::bigint as n,
  sum(temperature_c_count)::bigint as temperature_c_count, sum(temperature_c_sum) as temperature_c_sum,
  min(temperature_c_min) as temperature_c_min, max(temperature_c_max) as temperature_c_max,
  sum(humidity_rh_count)::bigint as humidity_rh_count, sum(humidity_rh_sum) as humidity_rh_sum,
  min(humidity_rh_min) as humidity_rh_min, max(humidity_rh_max) as humidity_rh_max,
  sum(pressure_hpa_count)::bigint as pressure_hpa_count, sum(pressure_hpa_sum) as pressure_hpa_sum,
  min(pressure_hpa_min) as pressure_hpa_min, max(pressure_hpa_max) as pressure_hpa_max,
  sum(pm2_5_count)::bigint as pm2_5_count, sum(pm2_5_sum) as pm2_5_sum, min(pm2_5_min) as pm2_5_min, max(pm2_5_max) as pm2_5_max,
  sum(pm10_count)::bigint as pm10_count, sum(pm10_sum) as pm10_sum, min(pm10_min) as pm10_min, max(pm10_max) as pm10_max,
  sum(co2_ppm_count)::bigint as co2_ppm_count, sum(co2_ppm_sum) as co2_ppm_sum, min(co2_ppm_min) as co2_ppm_min, max(co2_ppm_max) as co2_ppm_max
from readings_hourly
group by station_id, time_bucket(interval '1 day', bucket), quality_flag
with no data;

-- time_bucket's default origin for weeks is Monday 2000-01-03, so weeks start on Monday 00:00 UTC;
-- month buckets start on the 1st 00:00 UTC.
create materialized view readings_weekly
with (timescaledb.continuous, timescaledb.materialized_only = false) as
select
  station_id,
  time_bucket(interval '1 week', bucket) as bucket,
  quality_flag,
  sum(n)::bigint as n,
  sum(temperature_c_count)::bigint as temperature_c_count, sum(temperature_c_sum) as temperature_c_sum,
  min(temperature_c_min) as temperature_c_min, max(temperature_c_max) as temperature_c_max,
  sum(humidity_rh_count)::bigint as humidity_rh_count, sum(humidity_rh_sum) as humidity_rh_sum,
  min(humidity_rh_min) as humidity_rh_min, max(humidity_rh_max) as humidity_rh_max,
  sum(pressure_hpa_count)::bigint as pressure_hpa_count, sum(pressure_hpa_sum) as pressure_hpa_sum,
  min(pressure_hpa_min) as pressure_hpa_min, max(pressure_hpa_max) as pressure_hpa_max,
  sum(pm2_5_count)::bigint as pm2_5_count, sum(pm2_5_sum) as pm2_5_sum, min(pm2_5_min) as pm2_5_min, max(pm2_5_max) as pm2_5_max,
  sum(pm10_count)::bigint as pm10_count, sum(pm10_sum) as pm10_sum, min(pm10_min) as pm10_min, max(pm10_max) as pm10_max,
  sum(co2_ppm_count)::bigint as co2_ppm_count, sum(co2_ppm_sum) as co2_ppm_sum, min(co2_ppm_min) as co2_ppm_min, max(co2_ppm_max) as co2_ppm_max
from readings_daily
group by station_id, time_bucket(interval '1 week', bucket), quality_flag
with no data;

create materialized view readings_monthly
with (timescaledb.continuous, timescaledb.materialized_only = false) as
select
  station_id,
  time_bucket(interval '1 month', bucket) as bucket,
  quality_flag,
  sum(n)::bigint as n,
  sum(temperature_c_count)::bigint as temperature_c_count, sum(temperature_c_sum) as temperature_c_sum,
  min(temperature_c_min) as temperature_c_min, max(temperature_c_max) as temperature_c_max,
  sum(humidity_rh_count)::bigint as humidity_rh_count, sum(humidity_rh_sum) as humidity_rh_sum,
  min(humidity_rh_min) as humidity_rh_min, max(humidity_rh_max) as humidity_rh_max,
  sum(pressure_hpa_count)::bigint as pressure_hpa_count, sum(pressure_hpa_sum) as pressure_hpa_sum,
  min(pressure_hpa_min) as pressure_hpa_min, max(pressure_hpa_max) as pressure_hpa_max,
  sum(pm2_5_count)::bigint as pm2_5_count, sum(pm2_5_sum) as pm2_5_sum, min(pm2_5_min) as pm2_5_min, max(pm2_5_max) as pm2_5_max,
  sum(pm10_count)::bigint as pm10_count, sum(pm10_sum) as pm10_sum, min(pm10_min) as pm10_min, max(pm10_max) as pm10_max,
  sum(co2_ppm_count)::bigint as co2_ppm_count, sum(co2_ppm_sum) as co2_ppm_sum, min(co2_ppm_min) as co2_ppm_min, max(co2_ppm_max) as co2_ppm_max
from readings_daily
group by station_id, time_bucket(interval '1 month', bucket), quality_flag
with no data;

select add_continuous_aggregate_policy('readings_hourly',
  start_offset => interval '3 days', end_offset => interval '1 hour', schedule_interval => interval '15 minutes');
select add_continuous_aggregate_policy('readings_daily',
  start_offset => interval '10 days', end_offset => interval '1 day', schedule_interval => interval '1 hour');
select add_continuous_aggregate_policy('readings_weekly',
  start_offset => interval '8 weeks', end_offset => interval '1 week', schedule_interval => interval '6 hours');
select add_continuous_aggregate_policy('readings_monthly',
  start_offset => interval '6 months', end_offset => interval '1 month', schedule_interval => interval '1 day');

-- Old chunks go to the columnstore, segmented by station so one station's history reads contiguously.
alter table readings set (
  timescaledb.enable_columnstore = true,
  timescaledb.segmentby = 'station_id',
  timescaledb.orderby = 'ts desc'
);
call add_columnstore_policy('readings', after => interval '30 days');
