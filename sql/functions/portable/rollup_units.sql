-- The rollup tables and the unit each one buckets by.
create or replace function envmon_rollup_units()
 returns table(rollup text, unit text)
 language sql
 immutable
as $function$
  values ('readings_hourly', 'hour'), ('readings_daily', 'day'), ('readings_weekly', 'week'), ('readings_monthly', 'month')
$function$;
