-- Settled marks by the day of a station's newest reading (0020 held them to the month). A station posting
-- every minute then has at most a day of periods made again for each answer asked after its writes, where
-- it had up to a month (for a year of hourly periods, 24 of 8,760 rather than 744).
--
-- The mark now moves on without a new version: the service's ingest moves settled_before forward to the
-- day of the station's newest reading, and takes a new settled_version only for a batch reaching back
-- before settled_before. So under one settled_version, settled_before never goes back, and every write
-- since the version was taken touched only readings at or after the settled_before in force when it
-- landed: a part kept under that version, made of the periods before the settled_before of its time,
-- stays as it was, and is extended with the periods after it rather than made again.
alter table station_latest alter column settled_before set default date_trunc('day', now(), 'UTC');

-- A write that moves a station's version without deciding on the mark (an override, a deletion, an
-- instance of an earlier release while a deployment rolls) takes a new mark, as before, from the day
-- of the station's newest reading.
create or replace function envmon_settle_undecided_write() returns trigger language plpgsql as $$
begin
  if new.version <> old.version and new.settled_version = old.settled_version
     and coalesce(current_setting('envmon.settled_decided', true), '') <> 'on' then
    new.settled_version := nextval('station_data_version');
    new.settled_before := date_trunc('day', coalesce(new.ts, now()), 'UTC');
  end if;
  return new;
end $$;
