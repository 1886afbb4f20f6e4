-- The rollups checked against the readings: every bucket of a level whose rows differ from a GROUP BY over
-- the readings with the same UTC bucket bounds (weeks from Monday, months from the 1st), per station and
-- quality flag. A bucket differs when its readings' count differs, or a metric's count, sum or sum of
-- squares does: the sums are exact (0032), so they are compared for equality. `difference` names the
-- first that differs; `rollup_n` is null for a bucket the rollup lacks, `readings_n` for one it holds
-- without readings. `since` limits both sides to the buckets from the one holding it on. `envmon rollups
-- verify` reads it whole; the service's refresh reads the monthly level of each station it has just
-- refreshed a backfill of, from the backfill's first month. The work is one GROUP BY over the readings
-- named, per level.
create or replace function envmon_rollup_differences(rollup text, only_station text default NULL::text, since timestamp with time zone default NULL::timestamp with time zone)
 returns table(station_id text, bucket timestamp with time zone, quality_flag text, rollup_n bigint, readings_n bigint, difference text)
 language plpgsql
 stable
as $function$
declare
  unit text := case rollup when 'readings_hourly' then 'hour' when 'readings_daily' then 'day'
                           when 'readings_weekly' then 'week' when 'readings_monthly' then 'month' end;
  metrics text[] := array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'];
  grouped text;
  rolled text;
  checks text;
begin
  if unit is null then
    raise exception 'no rollup named %', rollup using errcode = '22023';
  end if;
  select string_agg(format('count(%1$I)::bigint as %1$I_count, sum(envmon_decimal(%1$I)) as %1$I_sum, '
                           'sum(envmon_decimal(%1$I) * envmon_decimal(%1$I)) as %1$I_sumsq', m), ', '),
         string_agg(format('%1$I_count::bigint as %1$I_count, %1$I_sum, %1$I_sumsq', m), ', '),
         string_agg(format(
           'when r.%1$I_count is distinct from g.%1$I_count then %2$L '
           'when r.%1$I_sum is distinct from g.%1$I_sum then %3$L '
           'when r.%1$I_sumsq is distinct from g.%1$I_sumsq then %4$L',
           m, m || '_count', m || '_sum', m || '_sumsq'), ' ')
    into grouped, rolled, checks
  from unnest(metrics) as m;
  return query execute format($query$
    select * from (
      select coalesce(r.station_id, g.station_id), coalesce(r.bucket, g.bucket), coalesce(r.quality_flag, g.quality_flag),
             r.n, g.n,
             case when r.n is null then 'missing' when g.n is null then 'extra' when r.n <> g.n then 'n' %1$s end
      from (
        select station_id, bucket, quality_flag, n::bigint as n, %2$s from %3$I
        where ($1 is null or station_id = $1) and ($2 is null or bucket >= date_trunc(%4$L, $2, 'UTC'))
      ) r
      full join (
        select station_id, date_trunc(%4$L, ts, 'UTC') as bucket, quality_flag, count(*)::bigint as n, %5$s
        from readings
        where ($1 is null or station_id = $1) and ($2 is null or ts >= date_trunc(%4$L, $2, 'UTC'))
        group by 1, 2, 3
      ) g on g.station_id = r.station_id and g.bucket = r.bucket and g.quality_flag = r.quality_flag
    ) compared (station_id, bucket, quality_flag, rollup_n, readings_n, difference)
    where difference is not null
    order by 1, 2, 3
  $query$, checks, rolled, rollup, unit, grouped) using only_station, since;
end $function$;
