-- Spread and every metric in the rollups. Each rollup row now holds, per metric of a reading
-- (temperature, humidity, pressure, PM1.0, PM2.5, PM10, CO2, CO, UV index), its count, sum, min, max and
-- M2, the sum of squared deviations from the bucket's mean (see 0017), so that the standard deviation of
-- any bucket, any merge of buckets and any quality filter is exact. The tables are made again with the
-- new columns and filled from the readings, and the triggers' statements are built again from the same
-- generators.

create or replace function envmon_rollup_metrics() returns text[] language sql immutable as $$
  select array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index']
$$;

-- The SELECT that summarises `source` (readings, or a subquery of them) into rollup rows. Hours are cut
-- by date_bin from a UTC midnight: the same hour as date_trunc in the UTC zone, by arithmetic (0015).
create or replace function envmon_rollup_select(unit text, source text) returns text language sql immutable as $$
  select format(
    'select station_id, %s as bucket, quality_flag, count(*) as n, %s from %s group by 1, 2, 3',
    case unit when 'hour' then 'date_bin(''1 hour'', ts, ''2000-01-01 00:00:00+00'')' else format('date_trunc(%L, ts, ''UTC'')', unit) end,
    string_agg(format(
      'count(%1$I) as %1$I_count, sum(%1$I) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max, envmon_m2(%1$I) as %1$I_m2', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$$;

-- The SELECT that re-aggregates rollup rows of `source` into coarser buckets of `unit`.
create or replace function envmon_rollup_reselect(unit text, source text) returns text language sql immutable as $$
  select format(
    'select station_id, date_trunc(%L, bucket, ''UTC'') as bucket, quality_flag, sum(n)::bigint as n, %s from %s group by 1, 2, 3',
    unit,
    string_agg(format(
      'sum(%1$I_count)::bigint as %1$I_count, sum(%1$I_sum) as %1$I_sum, min(%1$I_min) as %1$I_min, max(%1$I_max) as %1$I_max, '
      'envmon_m2_merge(array[%1$I_count::float8, coalesce(%1$I_sum, 0), %1$I_m2]) as %1$I_m2', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$$;

do $do$
declare
  r record;
  merge text;
  upsert text := 'insert into %I as r %s order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, %s';
  statement text;
begin
  for r in select * from envmon_rollup_units() loop
    execute format('drop table %I', r.rollup);
    execute format(
      'create table %I (station_id text not null, bucket timestamptz not null, quality_flag text not null, n bigint not null, %s, '
      'primary key (station_id, bucket, quality_flag))',
      r.rollup,
      (select string_agg(format(
        '%1$I_count bigint not null, %1$I_sum double precision, %1$I_min double precision, %1$I_max double precision, '
        '%1$I_m2 double precision not null', m), ', ')
       from unnest(envmon_rollup_metrics()) as m));
    execute format('insert into %I %s', r.rollup, envmon_rollup_select(r.unit, 'readings'));
  end loop;

  -- Inserted readings are merged into the rollups: counts and sums add, min and max widen, M2s combine
  -- (SET reads the row as it was, so every column merges the old values). As static SQL, planned once per
  -- session (0014).
  select string_agg(format(
    '%1$I_m2 = (float8_combine(array[r.%1$I_count::float8, coalesce(r.%1$I_sum, 0), r.%1$I_m2], '
    'array[excluded.%1$I_count::float8, coalesce(excluded.%1$I_sum, 0), excluded.%1$I_m2]))[3], '
    '%1$I_count = r.%1$I_count + excluded.%1$I_count, '
    '%1$I_sum = coalesce(r.%1$I_sum + excluded.%1$I_sum, r.%1$I_sum, excluded.%1$I_sum), '
    '%1$I_min = least(r.%1$I_min, excluded.%1$I_min), '
    '%1$I_max = greatest(r.%1$I_max, excluded.%1$I_max)', m), ', ')
  into merge
  from unnest(envmon_rollup_metrics()) as m;
  statement := format(
    'with hourly as materialized (%s), '
    'd as (' || upsert || '), w as (' || upsert || '), m as (' || upsert || ') '
    || upsert,
    envmon_rollup_select('hour', 'new_rows'),
    'readings_daily', envmon_rollup_reselect('day', 'hourly'), merge,
    'readings_weekly', envmon_rollup_reselect('week', 'hourly'), merge,
    'readings_monthly', envmon_rollup_reselect('month', 'hourly'), merge,
    'readings_hourly', 'select * from hourly', merge);
  execute format('create or replace function envmon_rollups_add() returns trigger language plpgsql as $fn$ begin %s; return null; end $fn$', statement);
end $do$;
