-- One refresh for every rollup, run by the service and by the production scheduler alike.
--
-- The refresh policies of 0003 refreshed a window counted back from now: a run moved a rollup's
-- watermark past history older than its window, which then stayed out of the rollup for good. Here
-- every run refreshes each rollup from the start of time up to the horizon. That costs no more than the
-- window did: TimescaleDB re-materialises only the ranges its invalidation log marks as changed (a
-- backfill, a flag override, a deletion), which it records durably in the writing transaction. So
-- whatever failed before, and in whatever order runs happen, the next run leaves no stale bucket below
-- any watermark.
select remove_continuous_aggregate_policy(name::regclass)
from unnest(array['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly']) as name;

-- Buckets from here on stay real-time (computed from the level below when read): a live reading lands
-- above every watermark and needs no refresh. One hour back, so that readings arriving a little late
-- land there too.
create function envmon_rollup_horizon() returns timestamptz language sql stable as $$
  select time_bucket(interval '1 hour', now() - interval '1 hour')
$$;

-- Finest first: each level is materialised from the one below, which is then already current. A
-- session advisory lock serialises every refresh on the database (the service's and the scheduler's),
-- since TimescaleDB refuses overlapping concurrent refreshes; it is released when the session ends,
-- so a failed run cannot leave it held. Each level commits on its own.
create procedure envmon_refresh_rollups(job_id integer default null, config jsonb default null)
language plpgsql as $$
declare
  level record;
begin
  perform pg_advisory_lock(7301946500);
  for level in
    select * from (values
      ('readings_hourly', interval '1 hour', 1), ('readings_daily', interval '1 day', 2),
      ('readings_weekly', interval '1 week', 3), ('readings_monthly', interval '1 month', 4)
    ) as l (rollup, width, position) order by position
  loop
    call refresh_continuous_aggregate(level.rollup::regclass, null, time_bucket(level.width, envmon_rollup_horizon()));
    commit;
  end loop;
  perform pg_advisory_unlock(7301946500);
end $$;

-- The production scheduler's share: a run every five minutes heals whatever the service could not
-- refresh (a server killed between commit and refresh). The first run waits five minutes so that a
-- database copied as a template carries no session.
select add_job('envmon_refresh_rollups', interval '5 minutes', initial_start => now() + interval '5 minutes',
  job_name => 'envmon rollup refresh');
