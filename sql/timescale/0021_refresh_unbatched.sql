-- Refreshes each rollup in one pass, not in batches. TimescaleDB 2.28 refreshes a manual call in batches
-- of buckets, and that left out a bucket when a change ended exactly on its start: a flag override of
-- five days ending at midnight kept the hour from midnight stale (its invalidation stranded in the
-- materialisation log until some later refresh covered it). That is timescale/timescaledb#10221, fixed
-- upstream by #10242; `buckets_per_batch` 0 refreshes as 2.27 did, which is also what each of our
-- refreshes needs: the invalidated ranges, at once. Releases before 2.28 take no options and refresh in
-- one pass already; which one is installed is looked up at each run, so an extension upgraded in place
-- is followed.
create or replace procedure envmon_refresh_rollups(job_id integer default null, config jsonb default null)
language plpgsql as $$
declare
  level record;
  window_end timestamptz;
  takes_options boolean := exists (
    select 1 from pg_proc where proname = 'refresh_continuous_aggregate' and 'options' = any(proargnames));
begin
  perform pg_advisory_lock(7301946500);
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
  perform pg_advisory_unlock(7301946500);
end $$;
