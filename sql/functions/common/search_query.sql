-- The search query of /search/?q=: websearch syntax ("quoted phrases", -exclusions, or) with English
-- stemming. Text the websearch parser cannot take (dozens of operators in a row overflow its stack)
-- falls back to plain words instead of failing the request.
create or replace function envmon_search_query(q text)
 returns tsquery
 language plpgsql
 stable
as $function$
begin
  return websearch_to_tsquery('english', q);
exception when others then
  return plainto_tsquery('english', q);
end $function$;
