-- The portable engine: hourly, daily, weekly and monthly rollups as plain tables with the same names
-- and columns as the timescale engine's continuous aggregates, kept exact by statement triggers in the
-- same transaction as the readings they summarise.
--
-- A rollup row holds, per (station, bucket, quality flag), the row count and per metric the count of
-- non-null values, their sum, min and max: enough to give exact mean/min/max/count for any flag filter.
-- Buckets are UTC: weeks start on Monday (ISO, as date_trunc does), months on the 1st.

create function envmon_rollup_metrics() returns text[] language sql immutable as $$
  select array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'pm10', 'co2_ppm']
$$;

create function envmon_rollup_units() returns table (rollup text, unit text) language sql immutable as $$
  values ('readings_hourly', 'hour'), ('readings_daily', 'day'), ('readings_weekly', 'week'), ('readings_monthly', 'month')
$$;

-- The SELECT that summarises `source` (a relation or subquery with reading columns) into rollup rows.
create function envmon_rollup_select(unit text, source text) returns text language sql immutable as $$
  select format(
    'select station_id, date_trunc(%L, ts, ''UTC'') as bucket, quality_flag, count(*) as n, %s from %s group by 1, 2, 3',
    unit,
    string_agg(format('count(%1$I) as %1$I_count, sum(%1$I) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$$;

do $$
declare
  r record;
begin
  for r in select * from envmon_rollup_units() loop
    execute format(
      'create table %I (station_id text not null, bucket timestamptz not null, quality_flag text not null, n bigint not null, %s, primary key (station_id, bucket, quality_flag))',
      r.rollup,
      (select string_agg(format('%1$I_count bigint not null, %1$I_sum double precision, %1$I_min double precision, %1$I_max double precision', m), ', ')
       from unnest(envmon_rollup_metrics()) as m));
  end loop;
end $$;

-- The SELECT that re-aggregates rollup rows of `source` into coarser buckets of `unit`.
create function envmon_rollup_reselect(unit text, source text) returns text language sql immutable as $$
  select format(
    'select station_id, date_trunc(%L, bucket, ''UTC'') as bucket, quality_flag, sum(n)::bigint as n, %s from %s group by 1, 2, 3',
    unit,
    string_agg(format('sum(%1$I_count)::bigint as %1$I_count, sum(%1$I_sum) as %1$I_sum, min(%1$I_min) as %1$I_min, max(%1$I_max) as %1$I_max', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$$;

-- Inserted readings are merged into the rollups: counts and sums add, min and max widen. The new rows
-- are summarised into hours once; days, weeks and months are rolled up from that small delta, all four
-- upserts in one statement. Rows are merged in key order so that concurrent ingests lock rollup rows
-- in the same order.
create function envmon_rollups_add() returns trigger language plpgsql as $$
declare
  merge text;
  upsert text := 'insert into %I as r %s order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, %s';
begin
  select string_agg(format(
    '%1$I_count = r.%1$I_count + excluded.%1$I_count, '
    '%1$I_sum = coalesce(r.%1$I_sum + excluded.%1$I_sum, r.%1$I_sum, excluded.%1$I_sum), '
    '%1$I_min = least(r.%1$I_min, excluded.%1$I_min), '
    '%1$I_max = greatest(r.%1$I_max, excluded.%1$I_max)', m), ', ')
  into merge
  from unnest(envmon_rollup_metrics()) as m;
  execute format(
    'with hourly as materialized (%s), '
    'd as (' || upsert || '), w as (' || upsert || '), m as (' || upsert || ') '
    || upsert,
    envmon_rollup_select('hour', 'new_rows'),
    'readings_daily', envmon_rollup_reselect('day', 'hourly'), merge,
    'readings_weekly', envmon_rollup_reselect('week', 'hourly'), merge,
    'readings_monthly', envmon_rollup_reselect('month', 'hourly'), merge,
    'readings_hourly', 'select * from hourly', merge);
  return null;
end $$;

-- Updated or deleted readings: min and max cannot be subtracted, so every touched bucket is rebuilt
-- from the readings. This is the path of the operator's flag override, never of ingest.
create function envmon_rollups_rebuild() returns trigger language plpgsql as $$
declare
  r record;
  touched_rows text := case tg_op
    when 'UPDATE' then 'select station_id, ts from old_rows union all select station_id, ts from new_rows'
    else 'select station_id, ts from old_rows' end;
  touched text;
begin
  for r in select * from envmon_rollup_units() loop
    touched := format('(select distinct station_id, date_trunc(%L, ts, ''UTC'') as bucket from (%s) t)', r.unit, touched_rows);
    execute format('delete from %I x using %s k where x.station_id = k.station_id and x.bucket = k.bucket',
      r.rollup, touched);
    execute format('insert into %I %s', r.rollup, envmon_rollup_select(r.unit, format(
      '(select readings.* from readings join %s k on readings.station_id = k.station_id '
      'and readings.ts >= k.bucket and readings.ts < k.bucket + interval %L) s', touched, '1 ' || r.unit)));
  end loop;
  return null;
end $$;

create trigger readings_rollups_insert after insert on readings
  referencing new table as new_rows for each statement execute function envmon_rollups_add();
create trigger readings_rollups_update after update on readings
  referencing old table as old_rows new table as new_rows for each statement execute function envmon_rollups_rebuild();
create trigger readings_rollups_delete after delete on readings
  referencing old table as old_rows for each statement execute function envmon_rollups_rebuild();
