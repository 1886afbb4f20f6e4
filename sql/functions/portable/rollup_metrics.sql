-- The metrics the rollups summarise, in the order of a reading's fields. Every rollup statement is built
-- from this list by the generators (rollup_select, rollup_reselect, rollups_add).
create or replace function envmon_rollup_metrics()
 returns text[]
 language sql
 immutable
as $function$
  select array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index']
$function$;
