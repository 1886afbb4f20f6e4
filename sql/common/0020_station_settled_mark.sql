-- How far back a station's readings have changed, for answers kept across its live writes: every write
-- of the service since `settled_version` was taken touched only readings at or after `settled_before`
-- (the first of a UTC month). So while a station's settled_version stands, its periods before
-- settled_before are as they were when it was taken, and a kept aggregate needs only its later periods
-- computed again. A station posting every minute changes its `version` with each batch, but its
-- settled mark only when a batch reaches back before the month it holds (a backfill, an override, a
-- deletion), or on its first write of a new month, which moves settled_before to that month.
alter table station_latest
  add column settled_version bigint not null default nextval('station_data_version'),
  add column settled_before timestamptz not null default date_trunc('month', now(), 'UTC');

-- A write that moves a station's version without deciding on the mark (an override, a deletion, an
-- instance of an earlier release while a deployment rolls) takes a new mark, as a change that may reach
-- back anywhere. Only the service's ingest decides, and says so for its transaction.
create function envmon_settle_undecided_write() returns trigger language plpgsql as $$
begin
  if new.version <> old.version and new.settled_version = old.settled_version
     and coalesce(current_setting('envmon.settled_decided', true), '') <> 'on' then
    new.settled_version := nextval('station_data_version');
    new.settled_before := date_trunc('month', now(), 'UTC');
  end if;
  return new;
end $$;

create trigger station_latest_settled before update on station_latest
  for each row execute function envmon_settle_undecided_write();
