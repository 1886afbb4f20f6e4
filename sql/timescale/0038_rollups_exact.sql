-- The rollups hold exact sums (0032): per metric its count, sum of values, min, max and sum of squared
-- values, the sums in numeric, so that every level and every merge of buckets adds to the same figure in
-- any order, and the standard deviation no longer needs M2. A continuous aggregate's columns cannot
-- change, so the four are made again, with no data: until the service's next refresh (at its start,
-- then every ROLLUP_HEAL_SECONDS) materialises them, real-time aggregation computes every bucket from
-- the level below, so reads stay exact meanwhile, only slower.

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
  -- A continuous aggregate groups the hypertable itself, with no subquery: each value's decimal is
  -- written twice, for the sum and the square.
  select string_agg(format(
    'count(%1$I) as %1$I_count, sum(envmon_decimal(%1$I)) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max, '
    'sum(envmon_decimal(%1$I) * envmon_decimal(%1$I)) as %1$I_sumsq', m), ', ')
  into raw from unnest(metrics) as m;
  select string_agg(format(
    'sum(%1$I_count)::bigint as %1$I_count, sum(%1$I_sum) as %1$I_sum, min(%1$I_min) as %1$I_min, max(%1$I_max) as %1$I_max, '
    'sum(%1$I_sumsq) as %1$I_sumsq', m), ', ')
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
