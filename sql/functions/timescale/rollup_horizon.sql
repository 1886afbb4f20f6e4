-- Buckets from here on stay real-time (computed from the level below when read): a live reading lands
-- above every watermark and needs no refresh. One hour back, so that readings arriving a little late
-- land there too.
create or replace function envmon_rollup_horizon()
 returns timestamp with time zone
 language sql
 stable
as $function$
  select time_bucket(interval '1 hour', now() - interval '1 hour')
$function$;
