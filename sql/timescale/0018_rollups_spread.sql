-- Spread and every metric in the rollups. Each rollup row now holds, per metric of a reading
-- (temperature, humidity, pressure, PM1.0, PM2.5, PM10, CO2, CO, UV index), its count, sum, min, max and
-- M2, the sum of squared deviations from the bucket's mean (see 0017), so that the standard deviation of
-- any bucket, any merge of buckets and any quality filter is exact. A continuous aggregate's columns
-- cannot change, so the four are made again, with no data: until the service's next refresh (at its
-- start, then every ROLLUP_HEAL_SECONDS) materialises them, real-time aggregation computes every bucket
-- from the level below, so reads stay exact meanwhile, only slower.

drop materialized view readings_monthly;
drop materialized view readings_weekly;
drop materialized view readings_daily;
drop materialized view readings_hourly;

do $do$
declare
  metrics text[] := array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'];
  raw text;
  merged text;
  level record;
begin
  select string_agg(format(
    'count(%1$I) as %1$I_count, sum(%1$I) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max, envmon_m2(%1$I) as %1$I_m2', m), ', ')
  into raw from unnest(metrics) as m;
  select string_agg(format(
    'sum(%1$I_count)::bigint as %1$I_count, sum(%1$I_sum) as %1$I_sum, min(%1$I_min) as %1$I_min, max(%1$I_max) as %1$I_max, '
    'envmon_m2_merge(array[%1$I_count::float8, coalesce(%1$I_sum, 0), %1$I_m2]) as %1$I_m2', m), ', ')
  into merged from unnest(metrics) as m;

  execute format(
    'create materialized view readings_hourly with (timescaledb.continuous, timescaledb.materialized_only = false) as '
    'select station_id, time_bucket(interval ''1 hour'', ts) as bucket, quality_flag, count(*) as n, %s '
    'from readings group by station_id, bucket, quality_flag with no data', raw);
  -- Days on hours; weeks (Monday 00:00 UTC, time_bucket's origin) and months on days.
  for level in select * from (values ('readings_daily', '1 day', 'readings_hourly', 1), ('readings_weekly', '1 week', 'readings_daily', 2),
                                     ('readings_monthly', '1 month', 'readings_daily', 3)) as l (rollup, width, source, position)
               order by position loop
    execute format(
      'create materialized view %I with (timescaledb.continuous, timescaledb.materialized_only = false) as '
      'select station_id, time_bucket(interval %L, bucket) as bucket, quality_flag, sum(n)::bigint as n, %s '
      'from %I group by station_id, time_bucket(interval %L, bucket), quality_flag with no data',
      level.rollup, level.width, merged, level.source, level.width);
  end loop;
end $do$;
