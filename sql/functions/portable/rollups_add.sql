-- The trigger that merges inserted readings into every rollup level: the batch is summarised by hour once
-- (a materialised CTE), the hours re-aggregated into days, weeks and months, and each level upserted.
-- Counts and the exact sums add, min and max widen (SET reads the row as it was, so every column merges
-- the old values). The statement is built here from the generators and compiled into the
-- function as static SQL, which plpgsql plans once per session rather than once per batch.
do $do$
declare
  merge text;
  upsert text := 'insert into %I as r %s order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, %s';
  statement text;
begin
  select string_agg(format(
    '%1$I_sumsq = coalesce(r.%1$I_sumsq + excluded.%1$I_sumsq, r.%1$I_sumsq, excluded.%1$I_sumsq), '
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
