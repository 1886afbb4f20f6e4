-- array_to_string is only STABLE in general; over text[] it is immutable, which generated columns need.
create or replace function envmon_words(text[])
 returns text
 language sql
 immutable parallel safe
as $function$
  select coalesce(array_to_string($1, ' '), '')
$function$;
