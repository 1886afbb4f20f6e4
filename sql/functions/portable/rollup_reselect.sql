-- The SELECT that re-aggregates rollup rows of `source` into coarser buckets of `unit`.
create or replace function envmon_rollup_reselect(unit text, source text)
 returns text
 language sql
 immutable
as $function$
  select format(
    'select station_id, date_trunc(%L, bucket, ''UTC'') as bucket, quality_flag, sum(n)::bigint as n, %s from %s group by 1, 2, 3',
    unit,
    string_agg(format(
      'sum(%1$I_count)::bigint as %1$I_count, sum(%1$I_sum) as %1$I_sum, min(%1$I_min) as %1$I_min, max(%1$I_max) as %1$I_max, '
      'envmon_m2_merge(array[%1$I_count::float8, coalesce(%1$I_sum, 0), %1$I_m2]) as %1$I_m2', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$function$;
