-- The SELECT that re-aggregates rollup rows of `source` into coarser buckets of `unit`: counts and the
-- exact sums add, min and max widen.
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
      'sum(%1$I_sumsq) as %1$I_sumsq', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$function$;
