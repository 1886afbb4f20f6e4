-- The refresh runs without JIT compilation. A continuous aggregate's materialisation query reads the
-- level below through its real-time view, whose union with the unmaterialised tail the planner costs at
-- millions however few rows a refresh touches; above jit_above_cost (100,000 by default) PostgreSQL then
-- compiles and optimises each query with LLVM before it reads a row. After a backfill of 10,000 readings
-- on one station-year, the weekly level took 1.2 s and the monthly 1.1-8 s of compilation for a few
-- hundred rows, against 0.17 s and 0.13 s without: every read waiting for that refresh waited as long.
-- Otherwise the procedure is the one of 0022: each level read in one snapshot, one run at a time.
create or replace procedure envmon_refresh_rollups(job_id integer default null, config jsonb default null)
language plpgsql as $$
declare
  level record;
  window_end timestamptz;
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
  end loop;
  perform set_config('jit', jit, false);
  perform set_config('default_transaction_isolation', isolation, false);
  perform pg_advisory_unlock(7301946500);
end $$;
