-- Months whose refresh TimescaleDB skips. An invalidation is a range of modified times, inclusive at both
-- ends; for a variable-width bucket (a month) TimescaleDB 2.28 treats its end as exclusive, so a range
-- ending exactly on a month's first instant leaves that month out: it is not materialised again, and the
-- range is consumed all the same, so no later refresh repairs it (timescale/timescaledb#10296).
-- readings_monthly is built on readings_daily, whose changed rows are logged by their day's start: any
-- write whose last day is the 1st of a month (a backfill, an override, a deletion) ends its range on that
-- month's start. The month is lost when the range moves from readings_daily's log into the monthly
-- level's own, which the weekly level's refresh already does (both are built on readings_daily), so the
-- ranges are read right after readings_daily is refreshed, before anything moves them. After the monthly
-- refresh, each month beginning exactly where such a range ends is refreshed with force, which
-- re-materialises it whatever the logs say. Fixed-width levels (hour, day, week) take inclusive ends
-- correctly and are refreshed as before.
-- Otherwise the procedure is the one of 0024: each level read in one snapshot, one run at a time, no JIT.
create or replace procedure envmon_refresh_rollups(job_id integer default null, config jsonb default null)
language plpgsql as $$
declare
  level record;
  window_end timestamptz;
  stranded timestamptz[] := '{}';
  month_start timestamptz;
  takes_options boolean := exists (
    select 1 from pg_proc where proname = 'refresh_continuous_aggregate' and 'options' = any(proargnames));
  isolation text := current_setting('default_transaction_isolation');
  jit text := current_setting('jit');
begin
  perform pg_advisory_lock(7301946500);
  perform set_config('default_transaction_isolation', 'repeatable read', false);
  perform set_config('jit', 'off', false);
  -- The CALL's own transaction keeps its isolation: the refresh starts in the next one.
  commit;
  for level in
    select * from (values
      ('readings_hourly', interval '1 hour', 1), ('readings_daily', interval '1 day', 2),
      ('readings_weekly', interval '1 week', 3), ('readings_monthly', interval '1 month', 4)
    ) as l (rollup, width, position) order by position
  loop
    window_end := time_bucket(level.width, envmon_rollup_horizon());
    -- A CALL is resolved when it first runs: the branch a release cannot take is never looked up.
    if takes_options then
      call refresh_continuous_aggregate(level.rollup::regclass, null, window_end, options => '{"buckets_per_batch": 0}');
    else
      call refresh_continuous_aggregate(level.rollup::regclass, null, window_end);
    end if;
    commit;
    if level.rollup = 'readings_daily' then
      -- The ranges readings_daily's refresh just logged for the levels built on it, as times; the log's
      -- open ends (the smallest and largest values it holds) are no month's start.
      select coalesce(array_agg(distinct range_end order by range_end), '{}') into stranded
      from (
        select _timescaledb_functions.to_timestamp(h.greatest_modified_value) as range_end
        from _timescaledb_catalog.continuous_aggs_hypertable_invalidation_log h
        join _timescaledb_catalog.continuous_agg c on h.hypertable_id = c.raw_hypertable_id
        where c.user_view_name = 'readings_monthly'
          and h.greatest_modified_value > -210866803200000000 and h.greatest_modified_value < 9223372036854775807
      ) ranges
      where range_end = time_bucket(interval '1 month', range_end)
        and range_end < time_bucket(interval '1 month', envmon_rollup_horizon());
    elsif level.rollup = 'readings_monthly' then
      foreach month_start in array stranded loop
        call refresh_continuous_aggregate(level.rollup::regclass, month_start, month_start + level.width, force => true);
        commit;
      end loop;
    end if;
  end loop;
  perform set_config('jit', jit, false);
  perform set_config('default_transaction_isolation', isolation, false);
  perform pg_advisory_unlock(7301946500);
end $$;
