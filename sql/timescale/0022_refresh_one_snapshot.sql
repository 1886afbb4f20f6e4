-- Each level's refresh reads the readings in one snapshot. refresh_continuous_aggregate commits and
-- starts its own transactions, which take the session's default isolation: under READ COMMITTED, its
-- materialisation re-reads each invalidated range in a snapshot of its own, so that a batch committed
-- meanwhile (a station's backfill touching an hour in January and one in October) landed in the later
-- ranges and not the earlier ones, and a reader saw part of a batch until the next refresh. Under
-- REPEATABLE READ every range of a level is read as of one moment; a batch committed after it is
-- invalidated for the next refresh, whole. Only refreshes write the materialisations and TimescaleDB's
-- refresh catalogs, one at a time (the advisory lock), so no write of theirs meets a concurrent one.
-- The columnstore policy may compress a chunk during a refresh: on TimescaleDB 2.28 it waits for a refresh
-- that has read the chunk, and a snapshot older than a compression still sees each of the chunk's rows
-- once (checked on 2.28.3: a repeatable-read reader counts a chunk compressed after its snapshot as before).
create or replace procedure envmon_refresh_rollups(job_id integer default null, config jsonb default null)
language plpgsql as $$
declare
  level record;
  window_end timestamptz;
  takes_options boolean := exists (
    select 1 from pg_proc where proname = 'refresh_continuous_aggregate' and 'options' = any(proargnames));
  isolation text := current_setting('default_transaction_isolation');
begin
  perform pg_advisory_lock(7301946500);
  perform set_config('default_transaction_isolation', 'repeatable read', false);
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
  perform set_config('default_transaction_isolation', isolation, false);
  perform pg_advisory_unlock(7301946500);
end $$;
