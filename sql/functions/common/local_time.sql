-- An instant as ISO 8601 text in a zone's local time with that zone's offset then, to the second
-- (2026-03-29T00:00:00+01:00): how answers in a `tz` name their buckets.
create or replace function envmon_local_iso(at timestamptz, zone text)
 returns text
 language sql
 stable parallel safe strict
as $function$
  select to_char(at at time zone zone, 'YYYY-MM-DD"T"HH24:MI:SS')
    || case when o < interval '0' then '-' else '+' end
    || to_char(abs(extract(epoch from o))::int / 3600, 'FM00') || ':' || to_char(abs(extract(epoch from o))::int / 60 % 60, 'FM00')
  from (select (at at time zone zone) - (at at time zone 'UTC') as o) offsets
$function$;
