-- The SELECT that summarises `source` (readings, or a subquery of them) into rollup rows: per station,
-- bucket and quality flag, the readings' count and each metric's count, exact sum, min, max and exact
-- sum of squares (migration 0032). Each value's decimal is taken once, in a subquery the planner keeps
-- apart, for both sums. Hours are cut by date_bin from a UTC midnight: the same hour as date_trunc in the
-- UTC zone, by arithmetic alone.
create or replace function envmon_rollup_select(unit text, source text)
 returns text
 language sql
 immutable
as $function$
  select format(
    'select station_id, %s as bucket, quality_flag, count(*) as n, %s from (select station_id, ts, quality_flag, %s from %s offset 0) d group by 1, 2, 3',
    case unit when 'hour' then 'date_bin(''1 hour'', ts, ''2000-01-01 00:00:00+00'')' else format('date_trunc(%L, ts, ''UTC'')', unit) end,
    string_agg(format(
      'count(%1$I) as %1$I_count, sum(%2$I) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max, sum(%2$I * %2$I) as %1$I_sumsq', m, m || '_d'), ', '),
    string_agg(format('%1$I, envmon_decimal(%1$I) as %2$I', m, m || '_d'), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$function$;
