-- A write that moves a station's version without deciding on the mark (an override, a deletion, an
-- instance of an earlier release while a deployment rolls) takes a new mark, as before, from the day
-- of the station's newest reading.
create or replace function envmon_settle_undecided_write()
 returns trigger
 language plpgsql
as $function$
begin
  if new.version <> old.version and new.settled_version = old.settled_version
     and coalesce(current_setting('envmon.settled_decided', true), '') <> 'on' then
    new.settled_version := nextval('station_data_version');
    new.settled_before := date_trunc('day', coalesce(new.ts, now()), 'UTC');
  end if;
  return new;
end $function$;
