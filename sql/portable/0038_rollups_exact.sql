-- The rollups hold exact sums (0032): per metric its count, sum of values, min, max and sum of squared
-- values, the sums in numeric, so that every level and every merge of buckets adds to the same figure
-- in any order, and the standard deviation no longer needs M2. The tables are made again with the new
-- columns and filled from the readings; the triggers' statements are built again from the generators
-- in sql/functions when this migration's run applies them. The fill is written out here, as those
-- generators read it, since they are applied after the migrations.

do $do$
declare
  r record;
  stats text;
  decimals text;
begin
  select string_agg(format(
           'count(%1$I) as %1$I_count, sum(%2$I) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max, sum(%2$I * %2$I) as %1$I_sumsq',
           m, m || '_d'), ', '),
         string_agg(format('%1$I, envmon_decimal(%1$I) as %2$I', m, m || '_d'), ', ')
    into stats, decimals
  from unnest(envmon_rollup_metrics()) as m;
  for r in select * from envmon_rollup_units() loop
    execute format('drop table %I', r.rollup);
    execute format(
      'create table %I (station_id text not null, bucket timestamptz not null, quality_flag text not null, n bigint not null, %s, '
      'primary key (station_id, bucket, quality_flag))',
      r.rollup,
      (select string_agg(format(
        '%1$I_count bigint not null, %1$I_sum numeric, %1$I_min double precision, %1$I_max double precision, %1$I_sumsq numeric', m), ', ')
       from unnest(envmon_rollup_metrics()) as m));
    execute format(
      'insert into %I select station_id, %s as bucket, quality_flag, count(*) as n, %s '
      'from (select station_id, ts, quality_flag, %s from readings offset 0) d group by 1, 2, 3',
      r.rollup,
      case r.unit when 'hour' then 'date_bin(''1 hour'', ts, ''2000-01-01 00:00:00+00'')' else format('date_trunc(%L, ts, ''UTC'')', r.unit) end,
      stats, decimals);
  end loop;
end $do$;
