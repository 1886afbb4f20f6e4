-- The organisation's content, loaded by `envmon import`. Every searchable record carries a stored,
-- weighted tsvector (English stemming) with a GIN index: title A, summary B, the rest C.
-- `position` keeps the import's order where the API lists records in it (team).

-- array_to_string is only STABLE in general; over text[] it is immutable, which generated columns need.
create function envmon_words(text[]) returns text language sql immutable parallel safe as $$
  select coalesce(array_to_string($1, ' '), '')
$$;

create table instruments (
  slug text primary key check (slug ~ '^[a-z0-9][a-z0-9-]*$'),
  name text not null,
  description text not null default '',
  search tsvector generated always as (
    setweight(to_tsvector('english', name), 'A') || setweight(to_tsvector('english', description), 'B')
  ) stored
);

create table team_members (
  slug text primary key check (slug ~ '^[a-z0-9][a-z0-9-]*$'),
  name text not null,
  role text not null,
  orcid text check (orcid ~ '^\d{4}-\d{4}-\d{4}-\d{3}[\dX]$'),
  research_areas text[] not null default '{}',
  bio text not null default '',
  position integer not null default 0,
  search tsvector generated always as (
    setweight(to_tsvector('english', name), 'A') ||
    setweight(to_tsvector('english', role || ' ' || envmon_words(research_areas)), 'B') ||
    setweight(to_tsvector('english', bio), 'C')
  ) stored
);

create table research_programmes (
  slug text primary key check (slug ~ '^[a-z0-9][a-z0-9-]*$'),
  title text not null,
  status text not null check (status in ('active', 'completed', 'planned')),
  summary text not null default '',
  position integer not null default 0,
  search tsvector generated always as (
    setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', summary), 'B')
  ) stored
);

create table programme_instruments (
  programme_slug text not null references research_programmes on delete cascade,
  instrument_slug text not null references instruments on delete cascade,
  position integer not null default 0,
  primary key (programme_slug, instrument_slug)
);

create table programme_team (
  programme_slug text not null references research_programmes on delete cascade,
  team_slug text not null references team_members on delete cascade,
  position integer not null default 0,
  primary key (programme_slug, team_slug)
);
create index programme_team_team_idx on programme_team (team_slug);

create table education_programmes (
  slug text primary key check (slug ~ '^[a-z0-9][a-z0-9-]*$'),
  title text not null,
  programme_type text not null check (programme_type in ('residency', 'fellowship', 'camp', 'teacher-development')),
  summary text not null default '',
  position integer not null default 0,
  search tsvector generated always as (
    setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', summary), 'B')
  ) stored
);

create table notes (
  slug text primary key check (slug ~ '^[a-z0-9][a-z0-9-]*$'),
  title text not null,
  note_type text not null check (note_type in ('field', 'build', 'observation', 'analysis', 'experiment')),
  date date not null,
  location text not null default '',
  summary text not null default '',
  body text not null default '',
  latitude double precision check (latitude between -90 and 90),
  longitude double precision check (longitude between -180 and 180),
  altitude_m double precision,
  tags text[] not null default '{}',
  search tsvector generated always as (
    setweight(to_tsvector('english', title), 'A') ||
    setweight(to_tsvector('english', summary || ' ' || envmon_words(tags)), 'B') ||
    setweight(to_tsvector('english', location || ' ' || body), 'C')
  ) stored
);
create index notes_date_idx on notes (date desc, slug);
create index notes_type_date_idx on notes (note_type, date desc);

create table note_programmes (
  note_slug text not null references notes on delete cascade,
  programme_slug text not null references research_programmes on delete cascade,
  position integer not null default 0,
  primary key (note_slug, programme_slug)
);
create index note_programmes_programme_idx on note_programmes (programme_slug);

create table publications (
  id integer primary key check (id > 0),
  title text not null,
  authors text not null,
  journal text not null default '',
  year integer not null check (year between 1800 and 2200),
  pub_type text not null check (pub_type in ('peer-reviewed', 'preprint', 'report', 'data-paper', 'public-writing')),
  provenance text not null check (provenance in ('own', 'collaborative', 'affiliate')),
  doi text,
  open_access_url text,
  abstract text,
  plain_language_summary text,
  search tsvector generated always as (
    setweight(to_tsvector('english', title), 'A') ||
    setweight(to_tsvector('english', coalesce(abstract, '') || ' ' || coalesce(plain_language_summary, '')), 'B') ||
    setweight(to_tsvector('english', authors || ' ' || journal), 'C')
  ) stored
);
create index publications_year_idx on publications (year desc, id desc);

create table publication_programmes (
  publication_id integer not null references publications on delete cascade,
  programme_slug text not null references research_programmes on delete cascade,
  primary key (publication_id, programme_slug)
);
create index publication_programmes_programme_idx on publication_programmes (programme_slug);

create table publication_authors (
  publication_id integer not null references publications on delete cascade,
  team_slug text not null references team_members on delete cascade,
  role text not null default '',
  position integer not null default 0,
  primary key (publication_id, team_slug)
);

create index instruments_search_idx on instruments using gin (search);
create index team_members_search_idx on team_members using gin (search);
create index research_programmes_search_idx on research_programmes using gin (search);
create index education_programmes_search_idx on education_programmes using gin (search);
create index notes_search_idx on notes using gin (search);
create index publications_search_idx on publications using gin (search);
