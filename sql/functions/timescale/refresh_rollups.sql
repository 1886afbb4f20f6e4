-- Refreshes the continuous aggregates, finest level first, up to the horizon (rollup_horizon), one run at
-- a time (the advisory lock):
-- - Each level is read in one snapshot: refresh_continuous_aggregate starts its own transactions, which
--   take the session's default isolation, set here to REPEATABLE READ, so that a batch committed during a
--   refresh is either wholly in it or wholly left for the next. The columnstore policy may compress a
--   chunk meanwhile; a snapshot older than the compression still sees each of the chunk's rows once.
-- - One run per level (buckets_per_batch 0, where the release takes options): a level is not left half
--   refreshed between batches.
-- - Without JIT: the materialisation query reads the level below through its real-time view, which the
--   planner costs far above jit_above_cost however few rows change, and compiling it costs more than the
--   refresh itself.
-- - Months TimescaleDB skips. An invalidation is a range of modified times, inclusive at both ends; for
--   a variable-width bucket (a month) TimescaleDB 2.28 treats its end as exclusive, so a range ending
--   exactly on a month's first instant leaves that month out and is consumed all the same
--   (timescale/timescaledb#10296). readings_monthly is built on readings_daily, whose changed rows are
--   logged by their day's start, so any write whose last day is the 1st of a month ends its range on
--   that month's start. The ranges are read right after readings_daily is refreshed, before the weekly
--   refresh moves them, and each month starting exactly where one ends is kept in rollup_stranded_months
--   in the same transaction; after the monthly refresh each kept month is refreshed again with force and
--   removed in the transaction that follows: a run cut anywhere leaves it for the next.
create or replace procedure envmon_refresh_rollups(IN job_id integer default NULL::integer, IN config jsonb default NULL::jsonb)
 language plpgsql
as $procedure$
declare
  level record;
  window_end timestamptz;
  owed record;
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
      insert into rollup_stranded_months (month_start)
      select distinct range_end
      from (
        select _timescaledb_functions.to_timestamp(h.greatest_modified_value) as range_end
        from _timescaledb_catalog.continuous_aggs_hypertable_invalidation_log h
        join _timescaledb_catalog.continuous_agg c on h.hypertable_id = c.raw_hypertable_id
        where c.user_view_name = 'readings_monthly'
          and h.greatest_modified_value > -210866803200000000 and h.greatest_modified_value < 9223372036854775807
      ) ranges
      where range_end = time_bucket(interval '1 month', range_end)
        and range_end < time_bucket(interval '1 month', envmon_rollup_horizon())
      on conflict do nothing;
      commit;
    elsif level.rollup = 'readings_monthly' then
      for owed in select m.month_start from rollup_stranded_months m order by m.month_start loop
        call refresh_continuous_aggregate(level.rollup::regclass, owed.month_start, owed.month_start + level.width, force => true);
        delete from rollup_stranded_months m where m.month_start = owed.month_start;
        commit;
      end loop;
    end if;
  end loop;
  perform set_config('jit', jit, false);
  perform set_config('default_transaction_isolation', isolation, false);
  perform pg_advisory_unlock(7301946500);
end $procedure$;
