-- M2 of a state {N, sum, M2}.
create or replace function envmon_state_m2(double precision[])
 returns double precision
 language sql
 immutable parallel safe strict
as $function$select $1[3]$function$;
