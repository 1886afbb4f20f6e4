-- The schema a fresh database has after `envmon migrate`, written by `npm run schema`.

-- tables

table education_programmes (
  slug text not null,
  title text not null,
  programme_type text not null,
  summary text not null default ''::text,
  position integer not null default 0,
  search tsvector generated always as ((setweight(to_tsvector('english'::regconfig, title), 'A'::"char") || setweight(to_tsvector('english'::regconfig, summary), 'B'::"char"))) stored
)

table envmon_migrations (
  name text not null,
  applied_at timestamp with time zone not null default now()
)

table envmon_settings (
  key text not null,
  value text not null
)

table instruments (
  slug text not null,
  name text not null,
  description text not null default ''::text,
  search tsvector generated always as ((setweight(to_tsvector('english'::regconfig, name), 'A'::"char") || setweight(to_tsvector('english'::regconfig, description), 'B'::"char"))) stored
)

table note_programmes (
  note_slug text not null,
  programme_slug text not null,
  position integer not null default 0
)

table notes (
  slug text not null,
  title text not null,
  note_type text not null,
  date date not null,
  location text not null default ''::text,
  summary text not null default ''::text,
  body text not null default ''::text,
  latitude double precision,
  longitude double precision,
  altitude_m double precision,
  tags text[] not null default '{}'::text[],
  search tsvector generated always as (((setweight(to_tsvector('english'::regconfig, title), 'A'::"char") || setweight(to_tsvector('english'::regconfig, ((summary || ' '::text) || envmon_words(tags))), 'B'::"char")) || setweight(to_tsvector('english'::regconfig, ((location || ' '::text) || body)), 'C'::"char"))) stored
)

table programme_instruments (
  programme_slug text not null,
  instrument_slug text not null,
  position integer not null default 0
)

table programme_team (
  programme_slug text not null,
  team_slug text not null,
  position integer not null default 0
)

table publication_authors (
  publication_id integer not null,
  team_slug text not null,
  role text not null default ''::text,
  position integer not null default 0
)

table publication_programmes (
  publication_id integer not null,
  programme_slug text not null
)

table publications (
  id integer not null,
  title text not null,
  authors text not null,
  journal text not null default ''::text,
  year integer not null,
  pub_type text not null,
  provenance text not null,
  doi text,
  open_access_url text,
  abstract text,
  plain_language_summary text,
  search tsvector generated always as (((setweight(to_tsvector('english'::regconfig, title), 'A'::"char") || setweight(to_tsvector('english'::regconfig, ((COALESCE(abstract, ''::text) || ' '::text) || COALESCE(plain_language_summary, ''::text))), 'B'::"char")) || setweight(to_tsvector('english'::regconfig, ((authors || ' '::text) || journal)), 'C'::"char"))) stored
)

table qc_configs (
  station_id text not null,
  set_at timestamp with time zone not null default clock_timestamp(),
  config jsonb,
  reason text
)

table quality_overrides (
  id bigint not null,
  station_id text not null,
  from_ts timestamp with time zone not null,
  to_ts timestamp with time zone not null,
  flag text not null,
  reason text not null,
  created_at timestamp with time zone not null default now()
)

table reading_flags_replaced (
  station_id text not null,
  ts timestamp with time zone not null,
  recorded_at timestamp with time zone not null,
  flag text not null,
  replaced_at timestamp with time zone not null,
  override_id bigint not null
)

table reading_log (
  station_id text not null,
  version bigint not null,
  logged_at timestamp with time zone not null default now(),
  readings integer not null,
  runs bigint[] not null
)

table reading_removals (
  id bigint not null,
  station_id text not null,
  from_ts timestamp with time zone not null,
  to_ts timestamp with time zone not null,
  readings integer not null,
  reason text not null,
  removed_at timestamp with time zone not null
)

table readings (
  station_id text not null,
  ts timestamp with time zone not null,
  temperature_c double precision,
  humidity_rh double precision,
  pressure_hpa double precision,
  altitude_m double precision,
  pm1_0 double precision,
  pm2_5 double precision,
  pm10 double precision,
  co2_ppm double precision,
  co_ppm double precision,
  uv_index double precision,
  quality_flag text not null default 'ok'::text,
  firmware_version text,
  module_data jsonb,
  recorded_at timestamp with time zone not null default now()
)

table readings_daily (
  station_id text not null,
  bucket timestamp with time zone not null,
  quality_flag text not null,
  n bigint not null,
  temperature_c_count bigint not null,
  temperature_c_sum numeric,
  temperature_c_min double precision,
  temperature_c_max double precision,
  temperature_c_sumsq numeric,
  humidity_rh_count bigint not null,
  humidity_rh_sum numeric,
  humidity_rh_min double precision,
  humidity_rh_max double precision,
  humidity_rh_sumsq numeric,
  pressure_hpa_count bigint not null,
  pressure_hpa_sum numeric,
  pressure_hpa_min double precision,
  pressure_hpa_max double precision,
  pressure_hpa_sumsq numeric,
  pm1_0_count bigint not null,
  pm1_0_sum numeric,
  pm1_0_min double precision,
  pm1_0_max double precision,
  pm1_0_sumsq numeric,
  pm2_5_count bigint not null,
  pm2_5_sum numeric,
  pm2_5_min double precision,
  pm2_5_max double precision,
  pm2_5_sumsq numeric,
  pm10_count bigint not null,
  pm10_sum numeric,
  pm10_min double precision,
  pm10_max double precision,
  pm10_sumsq numeric,
  co2_ppm_count bigint not null,
  co2_ppm_sum numeric,
  co2_ppm_min double precision,
  co2_ppm_max double precision,
  co2_ppm_sumsq numeric,
  co_ppm_count bigint not null,
  co_ppm_sum numeric,
  co_ppm_min double precision,
  co_ppm_max double precision,
  co_ppm_sumsq numeric,
  uv_index_count bigint not null,
  uv_index_sum numeric,
  uv_index_min double precision,
  uv_index_max double precision,
  uv_index_sumsq numeric
)

table readings_hourly (
  station_id text not null,
  bucket timestamp with time zone not null,
  quality_flag text not null,
  n bigint not null,
  temperature_c_count bigint not null,
  temperature_c_sum numeric,
  temperature_c_min double precision,
  temperature_c_max double precision,
  temperature_c_sumsq numeric,
  humidity_rh_count bigint not null,
  humidity_rh_sum numeric,
  humidity_rh_min double precision,
  humidity_rh_max double precision,
  humidity_rh_sumsq numeric,
  pressure_hpa_count bigint not null,
  pressure_hpa_sum numeric,
  pressure_hpa_min double precision,
  pressure_hpa_max double precision,
  pressure_hpa_sumsq numeric,
  pm1_0_count bigint not null,
  pm1_0_sum numeric,
  pm1_0_min double precision,
  pm1_0_max double precision,
  pm1_0_sumsq numeric,
  pm2_5_count bigint not null,
  pm2_5_sum numeric,
  pm2_5_min double precision,
  pm2_5_max double precision,
  pm2_5_sumsq numeric,
  pm10_count bigint not null,
  pm10_sum numeric,
  pm10_min double precision,
  pm10_max double precision,
  pm10_sumsq numeric,
  co2_ppm_count bigint not null,
  co2_ppm_sum numeric,
  co2_ppm_min double precision,
  co2_ppm_max double precision,
  co2_ppm_sumsq numeric,
  co_ppm_count bigint not null,
  co_ppm_sum numeric,
  co_ppm_min double precision,
  co_ppm_max double precision,
  co_ppm_sumsq numeric,
  uv_index_count bigint not null,
  uv_index_sum numeric,
  uv_index_min double precision,
  uv_index_max double precision,
  uv_index_sumsq numeric
)

table readings_monthly (
  station_id text not null,
  bucket timestamp with time zone not null,
  quality_flag text not null,
  n bigint not null,
  temperature_c_count bigint not null,
  temperature_c_sum numeric,
  temperature_c_min double precision,
  temperature_c_max double precision,
  temperature_c_sumsq numeric,
  humidity_rh_count bigint not null,
  humidity_rh_sum numeric,
  humidity_rh_min double precision,
  humidity_rh_max double precision,
  humidity_rh_sumsq numeric,
  pressure_hpa_count bigint not null,
  pressure_hpa_sum numeric,
  pressure_hpa_min double precision,
  pressure_hpa_max double precision,
  pressure_hpa_sumsq numeric,
  pm1_0_count bigint not null,
  pm1_0_sum numeric,
  pm1_0_min double precision,
  pm1_0_max double precision,
  pm1_0_sumsq numeric,
  pm2_5_count bigint not null,
  pm2_5_sum numeric,
  pm2_5_min double precision,
  pm2_5_max double precision,
  pm2_5_sumsq numeric,
  pm10_count bigint not null,
  pm10_sum numeric,
  pm10_min double precision,
  pm10_max double precision,
  pm10_sumsq numeric,
  co2_ppm_count bigint not null,
  co2_ppm_sum numeric,
  co2_ppm_min double precision,
  co2_ppm_max double precision,
  co2_ppm_sumsq numeric,
  co_ppm_count bigint not null,
  co_ppm_sum numeric,
  co_ppm_min double precision,
  co_ppm_max double precision,
  co_ppm_sumsq numeric,
  uv_index_count bigint not null,
  uv_index_sum numeric,
  uv_index_min double precision,
  uv_index_max double precision,
  uv_index_sumsq numeric
)

table readings_removed (
  station_id text not null,
  ts timestamp with time zone not null,
  temperature_c double precision,
  humidity_rh double precision,
  pressure_hpa double precision,
  altitude_m double precision,
  pm1_0 double precision,
  pm2_5 double precision,
  pm10 double precision,
  co2_ppm double precision,
  co_ppm double precision,
  uv_index double precision,
  quality_flag text not null,
  firmware_version text,
  module_data jsonb,
  recorded_at timestamp with time zone not null,
  removal_id bigint not null,
  removed_at timestamp with time zone not null
)

table readings_weekly (
  station_id text not null,
  bucket timestamp with time zone not null,
  quality_flag text not null,
  n bigint not null,
  temperature_c_count bigint not null,
  temperature_c_sum numeric,
  temperature_c_min double precision,
  temperature_c_max double precision,
  temperature_c_sumsq numeric,
  humidity_rh_count bigint not null,
  humidity_rh_sum numeric,
  humidity_rh_min double precision,
  humidity_rh_max double precision,
  humidity_rh_sumsq numeric,
  pressure_hpa_count bigint not null,
  pressure_hpa_sum numeric,
  pressure_hpa_min double precision,
  pressure_hpa_max double precision,
  pressure_hpa_sumsq numeric,
  pm1_0_count bigint not null,
  pm1_0_sum numeric,
  pm1_0_min double precision,
  pm1_0_max double precision,
  pm1_0_sumsq numeric,
  pm2_5_count bigint not null,
  pm2_5_sum numeric,
  pm2_5_min double precision,
  pm2_5_max double precision,
  pm2_5_sumsq numeric,
  pm10_count bigint not null,
  pm10_sum numeric,
  pm10_min double precision,
  pm10_max double precision,
  pm10_sumsq numeric,
  co2_ppm_count bigint not null,
  co2_ppm_sum numeric,
  co2_ppm_min double precision,
  co2_ppm_max double precision,
  co2_ppm_sumsq numeric,
  co_ppm_count bigint not null,
  co_ppm_sum numeric,
  co_ppm_min double precision,
  co_ppm_max double precision,
  co_ppm_sumsq numeric,
  uv_index_count bigint not null,
  uv_index_sum numeric,
  uv_index_min double precision,
  uv_index_max double precision,
  uv_index_sumsq numeric
)

table research_programmes (
  slug text not null,
  title text not null,
  status text not null,
  summary text not null default ''::text,
  position integer not null default 0,
  search tsvector generated always as ((setweight(to_tsvector('english'::regconfig, title), 'A'::"char") || setweight(to_tsvector('english'::regconfig, summary), 'B'::"char"))) stored
)

table rollup_backlog (
  id bigint not null default nextval('rollup_backlog_id_seq'::regclass),
  station_id text not null,
  first_ts timestamp with time zone not null
)

table snapshot_chunks (
  snapshot_id text not null,
  format text not null,
  n integer not null,
  bytes bytea not null
)

table snapshots (
  id text not null,
  path text not null,
  query text not null,
  as_of timestamp with time zone not null,
  created_at timestamp with time zone not null default now(),
  pinned jsonb not null,
  result_sha256 text not null,
  files jsonb not null,
  made_by text
)

table station_intervals (
  station_id text not null,
  set_at timestamp with time zone not null default clock_timestamp(),
  interval_seconds integer not null
)

table station_keys (
  key_id text not null,
  station_id text not null,
  key_hash bytea not null,
  created_at timestamp with time zone not null default now(),
  revoked_at timestamp with time zone,
  label text
)

table station_latest (
  station_id text not null,
  ts timestamp with time zone not null,
  version bigint not null default nextval('station_data_version'::regclass),
  first_ts timestamp with time zone,
  settled_version bigint not null default nextval('station_data_version'::regclass),
  settled_before timestamp with time zone not null default date_trunc('day'::text, now(), 'UTC'::text)
)

table stations (
  station_id text not null,
  name text not null,
  location_name text not null default ''::text,
  altitude_m double precision not null default 0,
  latitude double precision,
  longitude double precision,
  status text not null default 'active'::text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  interval_seconds integer not null default 60
)

table team_members (
  slug text not null,
  name text not null,
  role text not null,
  orcid text,
  research_areas text[] not null default '{}'::text[],
  bio text not null default ''::text,
  position integer not null default 0,
  search tsvector generated always as (((setweight(to_tsvector('english'::regconfig, name), 'A'::"char") || setweight(to_tsvector('english'::regconfig, ((role || ' '::text) || envmon_words(research_areas))), 'B'::"char")) || setweight(to_tsvector('english'::regconfig, bio), 'C'::"char"))) stored
)

-- constraints

constraint education_programmes_pkey on education_programmes: PRIMARY KEY (slug)

constraint education_programmes_programme_type_check on education_programmes: CHECK ((programme_type = ANY (ARRAY['residency'::text, 'fellowship'::text, 'camp'::text, 'teacher-development'::text])))

constraint education_programmes_slug_check on education_programmes: CHECK ((slug ~ '^[a-z0-9][a-z0-9-]*$'::text))

constraint envmon_migrations_pkey on envmon_migrations: PRIMARY KEY (name)

constraint envmon_settings_pkey on envmon_settings: PRIMARY KEY (key)

constraint instruments_pkey on instruments: PRIMARY KEY (slug)

constraint instruments_slug_check on instruments: CHECK ((slug ~ '^[a-z0-9][a-z0-9-]*$'::text))

constraint note_programmes_note_slug_fkey on note_programmes: FOREIGN KEY (note_slug) REFERENCES notes(slug) ON DELETE CASCADE

constraint note_programmes_pkey on note_programmes: PRIMARY KEY (note_slug, programme_slug)

constraint note_programmes_programme_slug_fkey on note_programmes: FOREIGN KEY (programme_slug) REFERENCES research_programmes(slug) ON DELETE CASCADE

constraint notes_latitude_check on notes: CHECK (((latitude >= ('-90'::integer)::double precision) AND (latitude <= (90)::double precision)))

constraint notes_longitude_check on notes: CHECK (((longitude >= ('-180'::integer)::double precision) AND (longitude <= (180)::double precision)))

constraint notes_note_type_check on notes: CHECK ((note_type = ANY (ARRAY['field'::text, 'build'::text, 'observation'::text, 'analysis'::text, 'experiment'::text])))

constraint notes_pkey on notes: PRIMARY KEY (slug)

constraint notes_slug_check on notes: CHECK ((slug ~ '^[a-z0-9][a-z0-9-]*$'::text))

constraint programme_instruments_instrument_slug_fkey on programme_instruments: FOREIGN KEY (instrument_slug) REFERENCES instruments(slug) ON DELETE CASCADE

constraint programme_instruments_pkey on programme_instruments: PRIMARY KEY (programme_slug, instrument_slug)

constraint programme_instruments_programme_slug_fkey on programme_instruments: FOREIGN KEY (programme_slug) REFERENCES research_programmes(slug) ON DELETE CASCADE

constraint programme_team_pkey on programme_team: PRIMARY KEY (programme_slug, team_slug)

constraint programme_team_programme_slug_fkey on programme_team: FOREIGN KEY (programme_slug) REFERENCES research_programmes(slug) ON DELETE CASCADE

constraint programme_team_team_slug_fkey on programme_team: FOREIGN KEY (team_slug) REFERENCES team_members(slug) ON DELETE CASCADE

constraint publication_authors_pkey on publication_authors: PRIMARY KEY (publication_id, team_slug)

constraint publication_authors_publication_id_fkey on publication_authors: FOREIGN KEY (publication_id) REFERENCES publications(id) ON DELETE CASCADE

constraint publication_authors_team_slug_fkey on publication_authors: FOREIGN KEY (team_slug) REFERENCES team_members(slug) ON DELETE CASCADE

constraint publication_programmes_pkey on publication_programmes: PRIMARY KEY (publication_id, programme_slug)

constraint publication_programmes_programme_slug_fkey on publication_programmes: FOREIGN KEY (programme_slug) REFERENCES research_programmes(slug) ON DELETE CASCADE

constraint publication_programmes_publication_id_fkey on publication_programmes: FOREIGN KEY (publication_id) REFERENCES publications(id) ON DELETE CASCADE

constraint publications_id_check on publications: CHECK ((id > 0))

constraint publications_pkey on publications: PRIMARY KEY (id)

constraint publications_provenance_check on publications: CHECK ((provenance = ANY (ARRAY['own'::text, 'collaborative'::text, 'affiliate'::text])))

constraint publications_pub_type_check on publications: CHECK ((pub_type = ANY (ARRAY['peer-reviewed'::text, 'preprint'::text, 'report'::text, 'data-paper'::text, 'public-writing'::text])))

constraint publications_year_check on publications: CHECK (((year >= 1800) AND (year <= 2200)))

constraint qc_configs_pkey on qc_configs: PRIMARY KEY (station_id, set_at)

constraint qc_configs_station_id_fkey on qc_configs: FOREIGN KEY (station_id) REFERENCES stations(station_id) ON DELETE CASCADE

constraint quality_overrides_check on quality_overrides: CHECK ((from_ts <= to_ts))

constraint quality_overrides_flag_check on quality_overrides: CHECK ((flag = ANY (ARRAY['ok'::text, 'suspect'::text, 'invalid'::text])))

constraint quality_overrides_pkey on quality_overrides: PRIMARY KEY (id)

constraint quality_overrides_station_id_fkey on quality_overrides: FOREIGN KEY (station_id) REFERENCES stations(station_id) ON DELETE CASCADE

constraint reading_flags_replaced_override_id_fkey on reading_flags_replaced: FOREIGN KEY (override_id) REFERENCES quality_overrides(id) ON DELETE CASCADE

constraint reading_log_pkey on reading_log: PRIMARY KEY (station_id, version)

constraint reading_removals_pkey on reading_removals: PRIMARY KEY (id)

constraint reading_removals_station_id_fkey on reading_removals: FOREIGN KEY (station_id) REFERENCES stations(station_id) ON DELETE CASCADE

constraint readings_pkey on readings: PRIMARY KEY (station_id, ts)

constraint readings_quality_flag_check on readings: CHECK ((quality_flag = ANY (ARRAY['ok'::text, 'suspect'::text, 'invalid'::text])))

constraint readings_daily_pkey on readings_daily: PRIMARY KEY (station_id, bucket, quality_flag)

constraint readings_hourly_pkey on readings_hourly: PRIMARY KEY (station_id, bucket, quality_flag)

constraint readings_monthly_pkey on readings_monthly: PRIMARY KEY (station_id, bucket, quality_flag)

constraint readings_removed_removal_id_fkey on readings_removed: FOREIGN KEY (removal_id) REFERENCES reading_removals(id) ON DELETE CASCADE

constraint readings_weekly_pkey on readings_weekly: PRIMARY KEY (station_id, bucket, quality_flag)

constraint research_programmes_pkey on research_programmes: PRIMARY KEY (slug)

constraint research_programmes_slug_check on research_programmes: CHECK ((slug ~ '^[a-z0-9][a-z0-9-]*$'::text))

constraint research_programmes_status_check on research_programmes: CHECK ((status = ANY (ARRAY['active'::text, 'completed'::text, 'planned'::text])))

constraint rollup_backlog_pkey on rollup_backlog: PRIMARY KEY (id)

constraint snapshot_chunks_format_check on snapshot_chunks: CHECK ((format = ANY (ARRAY['csv'::text, 'parquet'::text])))

constraint snapshot_chunks_n_check on snapshot_chunks: CHECK ((n >= 0))

constraint snapshot_chunks_pkey on snapshot_chunks: PRIMARY KEY (snapshot_id, format, n)

constraint snapshot_chunks_snapshot_id_fkey on snapshot_chunks: FOREIGN KEY (snapshot_id) REFERENCES snapshots(id) ON DELETE CASCADE

constraint snapshots_pkey on snapshots: PRIMARY KEY (id)

constraint station_intervals_pkey on station_intervals: PRIMARY KEY (station_id, set_at)

constraint station_intervals_station_id_fkey on station_intervals: FOREIGN KEY (station_id) REFERENCES stations(station_id) ON DELETE CASCADE

constraint station_keys_key_hash_key on station_keys: UNIQUE (key_hash)

constraint station_keys_label_check on station_keys: CHECK ((length(label) <= 200))

constraint station_keys_pkey on station_keys: PRIMARY KEY (key_id)

constraint station_keys_station_id_fkey on station_keys: FOREIGN KEY (station_id) REFERENCES stations(station_id) ON DELETE CASCADE

constraint station_latest_pkey on station_latest: PRIMARY KEY (station_id)

constraint stations_interval_seconds_check on stations: CHECK (((interval_seconds >= 1) AND (interval_seconds <= 86400)))

constraint stations_latitude_check on stations: CHECK (((latitude >= ('-90'::integer)::double precision) AND (latitude <= (90)::double precision)))

constraint stations_longitude_check on stations: CHECK (((longitude >= ('-180'::integer)::double precision) AND (longitude <= (180)::double precision)))

constraint stations_name_check on stations: CHECK ((name <> ''::text))

constraint stations_pkey on stations: PRIMARY KEY (station_id)

constraint stations_station_id_check on stations: CHECK ((station_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'::text))

constraint stations_status_check on stations: CHECK ((status = ANY (ARRAY['active'::text, 'offline'::text, 'planned'::text, 'maintenance'::text])))

constraint team_members_orcid_check on team_members: CHECK ((orcid ~ '^\d{4}-\d{4}-\d{4}-\d{3}[\dX]$'::text))

constraint team_members_pkey on team_members: PRIMARY KEY (slug)

constraint team_members_slug_check on team_members: CHECK ((slug ~ '^[a-z0-9][a-z0-9-]*$'::text))

-- indexes

CREATE UNIQUE INDEX education_programmes_pkey ON public.education_programmes USING btree (slug)

CREATE INDEX education_programmes_search_idx ON public.education_programmes USING gin (search)

CREATE UNIQUE INDEX envmon_migrations_pkey ON public.envmon_migrations USING btree (name)

CREATE UNIQUE INDEX envmon_settings_pkey ON public.envmon_settings USING btree (key)

CREATE UNIQUE INDEX instruments_pkey ON public.instruments USING btree (slug)

CREATE INDEX instruments_search_idx ON public.instruments USING gin (search)

CREATE UNIQUE INDEX note_programmes_pkey ON public.note_programmes USING btree (note_slug, programme_slug)

CREATE INDEX note_programmes_programme_idx ON public.note_programmes USING btree (programme_slug)

CREATE INDEX notes_date_idx ON public.notes USING btree (date DESC, slug)

CREATE UNIQUE INDEX notes_pkey ON public.notes USING btree (slug)

CREATE INDEX notes_search_idx ON public.notes USING gin (search)

CREATE INDEX notes_type_date_idx ON public.notes USING btree (note_type, date DESC)

CREATE UNIQUE INDEX programme_instruments_pkey ON public.programme_instruments USING btree (programme_slug, instrument_slug)

CREATE UNIQUE INDEX programme_team_pkey ON public.programme_team USING btree (programme_slug, team_slug)

CREATE INDEX programme_team_team_idx ON public.programme_team USING btree (team_slug)

CREATE UNIQUE INDEX publication_authors_pkey ON public.publication_authors USING btree (publication_id, team_slug)

CREATE UNIQUE INDEX publication_programmes_pkey ON public.publication_programmes USING btree (publication_id, programme_slug)

CREATE INDEX publication_programmes_programme_idx ON public.publication_programmes USING btree (programme_slug)

CREATE UNIQUE INDEX publications_pkey ON public.publications USING btree (id)

CREATE INDEX publications_search_idx ON public.publications USING gin (search)

CREATE INDEX publications_year_idx ON public.publications USING btree (year DESC, id DESC)

CREATE UNIQUE INDEX qc_configs_pkey ON public.qc_configs USING btree (station_id, set_at)

CREATE UNIQUE INDEX quality_overrides_pkey ON public.quality_overrides USING btree (id)

CREATE INDEX quality_overrides_station_created_idx ON public.quality_overrides USING btree (station_id, created_at)

CREATE INDEX quality_overrides_station_idx ON public.quality_overrides USING btree (station_id, from_ts, to_ts)

CREATE INDEX reading_flags_replaced_station_ts_idx ON public.reading_flags_replaced USING btree (station_id, ts, replaced_at)

CREATE UNIQUE INDEX reading_log_pkey ON public.reading_log USING btree (station_id, version)

CREATE UNIQUE INDEX reading_removals_pkey ON public.reading_removals USING btree (id)

CREATE INDEX reading_removals_station_idx ON public.reading_removals USING btree (station_id, removed_at)

CREATE UNIQUE INDEX readings_pkey ON public.readings USING btree (station_id, ts)

CREATE UNIQUE INDEX readings_daily_pkey ON public.readings_daily USING btree (station_id, bucket, quality_flag)

CREATE UNIQUE INDEX readings_hourly_pkey ON public.readings_hourly USING btree (station_id, bucket, quality_flag)

CREATE UNIQUE INDEX readings_monthly_pkey ON public.readings_monthly USING btree (station_id, bucket, quality_flag)

CREATE INDEX readings_removed_station_ts_idx ON public.readings_removed USING btree (station_id, ts)

CREATE UNIQUE INDEX readings_weekly_pkey ON public.readings_weekly USING btree (station_id, bucket, quality_flag)

CREATE UNIQUE INDEX research_programmes_pkey ON public.research_programmes USING btree (slug)

CREATE INDEX research_programmes_search_idx ON public.research_programmes USING gin (search)

CREATE UNIQUE INDEX rollup_backlog_pkey ON public.rollup_backlog USING btree (id)

CREATE INDEX rollup_backlog_station ON public.rollup_backlog USING btree (station_id)

CREATE UNIQUE INDEX snapshot_chunks_pkey ON public.snapshot_chunks USING btree (snapshot_id, format, n)

CREATE INDEX snapshots_as_of_idx ON public.snapshots USING btree (as_of)

CREATE INDEX snapshots_created_idx ON public.snapshots USING btree (created_at)

CREATE INDEX snapshots_made_by_idx ON public.snapshots USING btree (made_by, created_at) WHERE (made_by IS NOT NULL)

CREATE UNIQUE INDEX snapshots_pkey ON public.snapshots USING btree (id)

CREATE UNIQUE INDEX station_intervals_pkey ON public.station_intervals USING btree (station_id, set_at)

CREATE UNIQUE INDEX station_keys_key_hash_key ON public.station_keys USING btree (key_hash)

CREATE UNIQUE INDEX station_keys_pkey ON public.station_keys USING btree (key_id)

CREATE INDEX station_keys_station_id_idx ON public.station_keys USING btree (station_id)

CREATE UNIQUE INDEX station_latest_pkey ON public.station_latest USING btree (station_id)

CREATE UNIQUE INDEX stations_pkey ON public.stations USING btree (station_id)

CREATE UNIQUE INDEX team_members_pkey ON public.team_members USING btree (slug)

CREATE INDEX team_members_search_idx ON public.team_members USING gin (search)

-- views



-- triggers

CREATE TRIGGER readings_rollups_delete AFTER DELETE ON public.readings REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION envmon_rollups_rebuild()

CREATE TRIGGER readings_rollups_insert AFTER INSERT ON public.readings REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION envmon_rollups_add()

CREATE TRIGGER readings_rollups_update AFTER UPDATE ON public.readings REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION envmon_rollups_rebuild()

CREATE TRIGGER station_latest_settled BEFORE UPDATE ON public.station_latest FOR EACH ROW EXECUTE FUNCTION envmon_settle_undecided_write()

CREATE TRIGGER stations_interval_version AFTER INSERT OR UPDATE OF interval_seconds ON public.stations FOR EACH ROW EXECUTE FUNCTION envmon_station_interval_version()

-- functions

CREATE OR REPLACE FUNCTION public.envmon_batch_readings(station text, times timestamp with time zone[], first_ts timestamp with time zone, last_ts timestamp with time zone)
 RETURNS SETOF readings
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return query execute 'select * from readings where station_id = $1 and ts >= $3 and ts <= $4 and ts = any($2) order by ts'
    using station, times, first_ts, last_ts;
end $function$

CREATE OR REPLACE FUNCTION public.envmon_decimal(double precision)
 RETURNS numeric
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
AS $function$ select $1::text::numeric $function$

CREATE OR REPLACE FUNCTION public.envmon_latest_reading(station text)
 RETURNS SETOF readings
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  newest timestamptz;
begin
  select ts into newest from station_latest where station_id = station;
  if newest is not null then
    return query execute 'select * from readings where station_id = $1 and ts = $2' using station, newest;
  end if;
end $function$

CREATE OR REPLACE FUNCTION public.envmon_local_iso(at timestamp with time zone, zone text)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE STRICT
AS $function$
  select to_char(at at time zone zone, 'YYYY-MM-DD"T"HH24:MI:SS')
    || case when o < interval '0' then '-' else '+' end
    || to_char(abs(extract(epoch from o))::int / 3600, 'FM00') || ':' || to_char(abs(extract(epoch from o))::int / 60 % 60, 'FM00')
  from (select (at at time zone zone) - (at at time zone 'UTC') as o) offsets
$function$

CREATE OR REPLACE FUNCTION public.envmon_mean(n numeric, total numeric)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case when n > 0 then (round(total, greatest(scale(total), 40)) / n)::double precision end $function$

CREATE OR REPLACE FUNCTION public.envmon_readings_as_of(stations text[], first_ts timestamp with time zone, end_ts timestamp with time zone, as_of timestamp with time zone)
 RETURNS SETOF readings
 LANGUAGE sql
 STABLE
AS $function$
  select r.station_id, r.ts, r.temperature_c, r.humidity_rh, r.pressure_hpa, r.altitude_m, r.pm1_0, r.pm2_5, r.pm10,
         r.co2_ppm, r.co_ppm, r.uv_index,
         -- Looked up only when an override of the range came after as_of (computed once for the query).
         case when exists (select 1 from reading_flags_replaced
                           where station_id = any(stations) and ts >= first_ts and ts < end_ts and replaced_at > as_of)
           then coalesce((select h.flag from reading_flags_replaced h
                          where h.station_id = r.station_id and h.ts = r.ts and h.recorded_at = r.recorded_at and h.replaced_at > as_of
                          order by h.replaced_at limit 1), r.quality_flag)
           else r.quality_flag end as quality_flag,
         r.firmware_version, r.module_data, r.recorded_at
  from (
    -- Each part in timestamp order, so that the two merge in it (on timescale, the chunks in order)
    -- rather than being sorted again.
    (select * from readings
     where station_id = any(stations) and ts >= first_ts and ts < end_ts and recorded_at <= as_of
     order by ts)
    union all
    (select station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data, recorded_at from readings_removed
     where station_id = any(stations) and ts >= first_ts and ts < end_ts and recorded_at <= as_of and removed_at > as_of
     order by ts)
  ) r
$function$

CREATE OR REPLACE FUNCTION public.envmon_rollup_differences(rollup text, only_station text DEFAULT NULL::text, since timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS TABLE(station_id text, bucket timestamp with time zone, quality_flag text, rollup_n bigint, readings_n bigint, difference text)
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  unit text := case rollup when 'readings_hourly' then 'hour' when 'readings_daily' then 'day'
                           when 'readings_weekly' then 'week' when 'readings_monthly' then 'month' end;
  metrics text[] := array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'];
  grouped text;
  rolled text;
  checks text;
begin
  if unit is null then
    raise exception 'no rollup named %', rollup using errcode = '22023';
  end if;
  select string_agg(format('count(%1$I)::bigint as %1$I_count, sum(envmon_decimal(%1$I)) as %1$I_sum, '
                           'sum(envmon_decimal(%1$I) * envmon_decimal(%1$I)) as %1$I_sumsq', m), ', '),
         string_agg(format('%1$I_count::bigint as %1$I_count, %1$I_sum, %1$I_sumsq', m), ', '),
         string_agg(format(
           'when r.%1$I_count is distinct from g.%1$I_count then %2$L '
           'when r.%1$I_sum is distinct from g.%1$I_sum then %3$L '
           'when r.%1$I_sumsq is distinct from g.%1$I_sumsq then %4$L',
           m, m || '_count', m || '_sum', m || '_sumsq'), ' ')
    into grouped, rolled, checks
  from unnest(metrics) as m;
  return query execute format($query$
    select * from (
      select coalesce(r.station_id, g.station_id), coalesce(r.bucket, g.bucket), coalesce(r.quality_flag, g.quality_flag),
             r.n, g.n,
             case when r.n is null then 'missing' when g.n is null then 'extra' when r.n <> g.n then 'n' %1$s end
      from (
        select station_id, bucket, quality_flag, n::bigint as n, %2$s from %3$I
        where ($1 is null or station_id = $1) and ($2 is null or bucket >= date_trunc(%4$L, $2, 'UTC'))
      ) r
      full join (
        select station_id, date_trunc(%4$L, ts, 'UTC') as bucket, quality_flag, count(*)::bigint as n, %5$s
        from readings
        where ($1 is null or station_id = $1) and ($2 is null or ts >= date_trunc(%4$L, $2, 'UTC'))
        group by 1, 2, 3
      ) g on g.station_id = r.station_id and g.bucket = r.bucket and g.quality_flag = r.quality_flag
    ) compared (station_id, bucket, quality_flag, rollup_n, readings_n, difference)
    where difference is not null
    order by 1, 2, 3
  $query$, checks, rolled, rollup, unit, grouped) using only_station, since;
end $function$

CREATE OR REPLACE FUNCTION public.envmon_rollup_metrics()
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select array['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index']
$function$

CREATE OR REPLACE FUNCTION public.envmon_rollup_remake(rollup text, station text, bucket_start timestamp with time zone, bucket_end timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  unit text := case rollup when 'readings_hourly' then 'hour' when 'readings_daily' then 'day'
                           when 'readings_weekly' then 'week' when 'readings_monthly' then 'month' end;
begin
  if unit is null then
    raise exception 'no rollup named %', rollup using errcode = '22023';
  end if;
  execute format('delete from %I where station_id = $1 and bucket >= $2 and bucket < $3', rollup) using station, bucket_start, bucket_end;
  execute format('insert into %I %s', rollup, envmon_rollup_select(unit,
    format('(select * from readings where station_id = %L and ts >= %L and ts < %L) bucket_readings', station, bucket_start, bucket_end)));
end $function$

CREATE OR REPLACE FUNCTION public.envmon_rollup_reselect(unit text, source text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select format(
    'select station_id, date_trunc(%L, bucket, ''UTC'') as bucket, quality_flag, sum(n)::bigint as n, %s from %s group by 1, 2, 3',
    unit,
    string_agg(format(
      'sum(%1$I_count)::bigint as %1$I_count, sum(%1$I_sum) as %1$I_sum, min(%1$I_min) as %1$I_min, max(%1$I_max) as %1$I_max, '
      'sum(%1$I_sumsq) as %1$I_sumsq', m), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$function$

CREATE OR REPLACE FUNCTION public.envmon_rollup_select(unit text, source text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select format(
    'select station_id, %s as bucket, quality_flag, count(*) as n, %s from (select station_id, ts, quality_flag, %s from %s offset 0) d group by 1, 2, 3',
    case unit when 'hour' then 'date_bin(''1 hour'', ts, ''2000-01-01 00:00:00+00'')' else format('date_trunc(%L, ts, ''UTC'')', unit) end,
    string_agg(format(
      'count(%1$I) as %1$I_count, sum(%2$I) as %1$I_sum, min(%1$I) as %1$I_min, max(%1$I) as %1$I_max, sum(%2$I * %2$I) as %1$I_sumsq', m, m || '_d'), ', '),
    string_agg(format('%1$I, envmon_decimal(%1$I) as %2$I', m, m || '_d'), ', '),
    source)
  from unnest(envmon_rollup_metrics()) as m
$function$

CREATE OR REPLACE FUNCTION public.envmon_rollup_units()
 RETURNS TABLE(rollup text, unit text)
 LANGUAGE sql
 IMMUTABLE
AS $function$
  values ('readings_hourly', 'hour'), ('readings_daily', 'day'), ('readings_weekly', 'week'), ('readings_monthly', 'month')
$function$

CREATE OR REPLACE FUNCTION public.envmon_rollups_add()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$ begin with hourly as materialized (select station_id, date_bin('1 hour', ts, '2000-01-01 00:00:00+00') as bucket, quality_flag, count(*) as n, count(temperature_c) as temperature_c_count, sum(temperature_c_d) as temperature_c_sum, min(temperature_c) as temperature_c_min, max(temperature_c) as temperature_c_max, sum(temperature_c_d * temperature_c_d) as temperature_c_sumsq, count(humidity_rh) as humidity_rh_count, sum(humidity_rh_d) as humidity_rh_sum, min(humidity_rh) as humidity_rh_min, max(humidity_rh) as humidity_rh_max, sum(humidity_rh_d * humidity_rh_d) as humidity_rh_sumsq, count(pressure_hpa) as pressure_hpa_count, sum(pressure_hpa_d) as pressure_hpa_sum, min(pressure_hpa) as pressure_hpa_min, max(pressure_hpa) as pressure_hpa_max, sum(pressure_hpa_d * pressure_hpa_d) as pressure_hpa_sumsq, count(pm1_0) as pm1_0_count, sum(pm1_0_d) as pm1_0_sum, min(pm1_0) as pm1_0_min, max(pm1_0) as pm1_0_max, sum(pm1_0_d * pm1_0_d) as pm1_0_sumsq, count(pm2_5) as pm2_5_count, sum(pm2_5_d) as pm2_5_sum, min(pm2_5) as pm2_5_min, max(pm2_5) as pm2_5_max, sum(pm2_5_d * pm2_5_d) as pm2_5_sumsq, count(pm10) as pm10_count, sum(pm10_d) as pm10_sum, min(pm10) as pm10_min, max(pm10) as pm10_max, sum(pm10_d * pm10_d) as pm10_sumsq, count(co2_ppm) as co2_ppm_count, sum(co2_ppm_d) as co2_ppm_sum, min(co2_ppm) as co2_ppm_min, max(co2_ppm) as co2_ppm_max, sum(co2_ppm_d * co2_ppm_d) as co2_ppm_sumsq, count(co_ppm) as co_ppm_count, sum(co_ppm_d) as co_ppm_sum, min(co_ppm) as co_ppm_min, max(co_ppm) as co_ppm_max, sum(co_ppm_d * co_ppm_d) as co_ppm_sumsq, count(uv_index) as uv_index_count, sum(uv_index_d) as uv_index_sum, min(uv_index) as uv_index_min, max(uv_index) as uv_index_max, sum(uv_index_d * uv_index_d) as uv_index_sumsq from (select station_id, ts, quality_flag, temperature_c, envmon_decimal(temperature_c) as temperature_c_d, humidity_rh, envmon_decimal(humidity_rh) as humidity_rh_d, pressure_hpa, envmon_decimal(pressure_hpa) as pressure_hpa_d, pm1_0, envmon_decimal(pm1_0) as pm1_0_d, pm2_5, envmon_decimal(pm2_5) as pm2_5_d, pm10, envmon_decimal(pm10) as pm10_d, co2_ppm, envmon_decimal(co2_ppm) as co2_ppm_d, co_ppm, envmon_decimal(co_ppm) as co_ppm_d, uv_index, envmon_decimal(uv_index) as uv_index_d from new_rows offset 0) d group by 1, 2, 3), d as (insert into readings_daily as r select station_id, date_trunc('day', bucket, 'UTC') as bucket, quality_flag, sum(n)::bigint as n, sum(temperature_c_count)::bigint as temperature_c_count, sum(temperature_c_sum) as temperature_c_sum, min(temperature_c_min) as temperature_c_min, max(temperature_c_max) as temperature_c_max, sum(temperature_c_sumsq) as temperature_c_sumsq, sum(humidity_rh_count)::bigint as humidity_rh_count, sum(humidity_rh_sum) as humidity_rh_sum, min(humidity_rh_min) as humidity_rh_min, max(humidity_rh_max) as humidity_rh_max, sum(humidity_rh_sumsq) as humidity_rh_sumsq, sum(pressure_hpa_count)::bigint as pressure_hpa_count, sum(pressure_hpa_sum) as pressure_hpa_sum, min(pressure_hpa_min) as pressure_hpa_min, max(pressure_hpa_max) as pressure_hpa_max, sum(pressure_hpa_sumsq) as pressure_hpa_sumsq, sum(pm1_0_count)::bigint as pm1_0_count, sum(pm1_0_sum) as pm1_0_sum, min(pm1_0_min) as pm1_0_min, max(pm1_0_max) as pm1_0_max, sum(pm1_0_sumsq) as pm1_0_sumsq, sum(pm2_5_count)::bigint as pm2_5_count, sum(pm2_5_sum) as pm2_5_sum, min(pm2_5_min) as pm2_5_min, max(pm2_5_max) as pm2_5_max, sum(pm2_5_sumsq) as pm2_5_sumsq, sum(pm10_count)::bigint as pm10_count, sum(pm10_sum) as pm10_sum, min(pm10_min) as pm10_min, max(pm10_max) as pm10_max, sum(pm10_sumsq) as pm10_sumsq, sum(co2_ppm_count)::bigint as co2_ppm_count, sum(co2_ppm_sum) as co2_ppm_sum, min(co2_ppm_min) as co2_ppm_min, max(co2_ppm_max) as co2_ppm_max, sum(co2_ppm_sumsq) as co2_ppm_sumsq, sum(co_ppm_count)::bigint as co_ppm_count, sum(co_ppm_sum) as co_ppm_sum, min(co_ppm_min) as co_ppm_min, max(co_ppm_max) as co_ppm_max, sum(co_ppm_sumsq) as co_ppm_sumsq, sum(uv_index_count)::bigint as uv_index_count, sum(uv_index_sum) as uv_index_sum, min(uv_index_min) as uv_index_min, max(uv_index_max) as uv_index_max, sum(uv_index_sumsq) as uv_index_sumsq from hourly group by 1, 2, 3 order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, temperature_c_sumsq = coalesce(r.temperature_c_sumsq + excluded.temperature_c_sumsq, r.temperature_c_sumsq, excluded.temperature_c_sumsq), temperature_c_count = r.temperature_c_count + excluded.temperature_c_count, temperature_c_sum = coalesce(r.temperature_c_sum + excluded.temperature_c_sum, r.temperature_c_sum, excluded.temperature_c_sum), temperature_c_min = least(r.temperature_c_min, excluded.temperature_c_min), temperature_c_max = greatest(r.temperature_c_max, excluded.temperature_c_max), humidity_rh_sumsq = coalesce(r.humidity_rh_sumsq + excluded.humidity_rh_sumsq, r.humidity_rh_sumsq, excluded.humidity_rh_sumsq), humidity_rh_count = r.humidity_rh_count + excluded.humidity_rh_count, humidity_rh_sum = coalesce(r.humidity_rh_sum + excluded.humidity_rh_sum, r.humidity_rh_sum, excluded.humidity_rh_sum), humidity_rh_min = least(r.humidity_rh_min, excluded.humidity_rh_min), humidity_rh_max = greatest(r.humidity_rh_max, excluded.humidity_rh_max), pressure_hpa_sumsq = coalesce(r.pressure_hpa_sumsq + excluded.pressure_hpa_sumsq, r.pressure_hpa_sumsq, excluded.pressure_hpa_sumsq), pressure_hpa_count = r.pressure_hpa_count + excluded.pressure_hpa_count, pressure_hpa_sum = coalesce(r.pressure_hpa_sum + excluded.pressure_hpa_sum, r.pressure_hpa_sum, excluded.pressure_hpa_sum), pressure_hpa_min = least(r.pressure_hpa_min, excluded.pressure_hpa_min), pressure_hpa_max = greatest(r.pressure_hpa_max, excluded.pressure_hpa_max), pm1_0_sumsq = coalesce(r.pm1_0_sumsq + excluded.pm1_0_sumsq, r.pm1_0_sumsq, excluded.pm1_0_sumsq), pm1_0_count = r.pm1_0_count + excluded.pm1_0_count, pm1_0_sum = coalesce(r.pm1_0_sum + excluded.pm1_0_sum, r.pm1_0_sum, excluded.pm1_0_sum), pm1_0_min = least(r.pm1_0_min, excluded.pm1_0_min), pm1_0_max = greatest(r.pm1_0_max, excluded.pm1_0_max), pm2_5_sumsq = coalesce(r.pm2_5_sumsq + excluded.pm2_5_sumsq, r.pm2_5_sumsq, excluded.pm2_5_sumsq), pm2_5_count = r.pm2_5_count + excluded.pm2_5_count, pm2_5_sum = coalesce(r.pm2_5_sum + excluded.pm2_5_sum, r.pm2_5_sum, excluded.pm2_5_sum), pm2_5_min = least(r.pm2_5_min, excluded.pm2_5_min), pm2_5_max = greatest(r.pm2_5_max, excluded.pm2_5_max), pm10_sumsq = coalesce(r.pm10_sumsq + excluded.pm10_sumsq, r.pm10_sumsq, excluded.pm10_sumsq), pm10_count = r.pm10_count + excluded.pm10_count, pm10_sum = coalesce(r.pm10_sum + excluded.pm10_sum, r.pm10_sum, excluded.pm10_sum), pm10_min = least(r.pm10_min, excluded.pm10_min), pm10_max = greatest(r.pm10_max, excluded.pm10_max), co2_ppm_sumsq = coalesce(r.co2_ppm_sumsq + excluded.co2_ppm_sumsq, r.co2_ppm_sumsq, excluded.co2_ppm_sumsq), co2_ppm_count = r.co2_ppm_count + excluded.co2_ppm_count, co2_ppm_sum = coalesce(r.co2_ppm_sum + excluded.co2_ppm_sum, r.co2_ppm_sum, excluded.co2_ppm_sum), co2_ppm_min = least(r.co2_ppm_min, excluded.co2_ppm_min), co2_ppm_max = greatest(r.co2_ppm_max, excluded.co2_ppm_max), co_ppm_sumsq = coalesce(r.co_ppm_sumsq + excluded.co_ppm_sumsq, r.co_ppm_sumsq, excluded.co_ppm_sumsq), co_ppm_count = r.co_ppm_count + excluded.co_ppm_count, co_ppm_sum = coalesce(r.co_ppm_sum + excluded.co_ppm_sum, r.co_ppm_sum, excluded.co_ppm_sum), co_ppm_min = least(r.co_ppm_min, excluded.co_ppm_min), co_ppm_max = greatest(r.co_ppm_max, excluded.co_ppm_max), uv_index_sumsq = coalesce(r.uv_index_sumsq + excluded.uv_index_sumsq, r.uv_index_sumsq, excluded.uv_index_sumsq), uv_index_count = r.uv_index_count + excluded.uv_index_count, uv_index_sum = coalesce(r.uv_index_sum + excluded.uv_index_sum, r.uv_index_sum, excluded.uv_index_sum), uv_index_min = least(r.uv_index_min, excluded.uv_index_min), uv_index_max = greatest(r.uv_index_max, excluded.uv_index_max)), w as (insert into readings_weekly as r select station_id, date_trunc('week', bucket, 'UTC') as bucket, quality_flag, sum(n)::bigint as n, sum(temperature_c_count)::bigint as temperature_c_count, sum(temperature_c_sum) as temperature_c_sum, min(temperature_c_min) as temperature_c_min, max(temperature_c_max) as temperature_c_max, sum(temperature_c_sumsq) as temperature_c_sumsq, sum(humidity_rh_count)::bigint as humidity_rh_count, sum(humidity_rh_sum) as humidity_rh_sum, min(humidity_rh_min) as humidity_rh_min, max(humidity_rh_max) as humidity_rh_max, sum(humidity_rh_sumsq) as humidity_rh_sumsq, sum(pressure_hpa_count)::bigint as pressure_hpa_count, sum(pressure_hpa_sum) as pressure_hpa_sum, min(pressure_hpa_min) as pressure_hpa_min, max(pressure_hpa_max) as pressure_hpa_max, sum(pressure_hpa_sumsq) as pressure_hpa_sumsq, sum(pm1_0_count)::bigint as pm1_0_count, sum(pm1_0_sum) as pm1_0_sum, min(pm1_0_min) as pm1_0_min, max(pm1_0_max) as pm1_0_max, sum(pm1_0_sumsq) as pm1_0_sumsq, sum(pm2_5_count)::bigint as pm2_5_count, sum(pm2_5_sum) as pm2_5_sum, min(pm2_5_min) as pm2_5_min, max(pm2_5_max) as pm2_5_max, sum(pm2_5_sumsq) as pm2_5_sumsq, sum(pm10_count)::bigint as pm10_count, sum(pm10_sum) as pm10_sum, min(pm10_min) as pm10_min, max(pm10_max) as pm10_max, sum(pm10_sumsq) as pm10_sumsq, sum(co2_ppm_count)::bigint as co2_ppm_count, sum(co2_ppm_sum) as co2_ppm_sum, min(co2_ppm_min) as co2_ppm_min, max(co2_ppm_max) as co2_ppm_max, sum(co2_ppm_sumsq) as co2_ppm_sumsq, sum(co_ppm_count)::bigint as co_ppm_count, sum(co_ppm_sum) as co_ppm_sum, min(co_ppm_min) as co_ppm_min, max(co_ppm_max) as co_ppm_max, sum(co_ppm_sumsq) as co_ppm_sumsq, sum(uv_index_count)::bigint as uv_index_count, sum(uv_index_sum) as uv_index_sum, min(uv_index_min) as uv_index_min, max(uv_index_max) as uv_index_max, sum(uv_index_sumsq) as uv_index_sumsq from hourly group by 1, 2, 3 order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, temperature_c_sumsq = coalesce(r.temperature_c_sumsq + excluded.temperature_c_sumsq, r.temperature_c_sumsq, excluded.temperature_c_sumsq), temperature_c_count = r.temperature_c_count + excluded.temperature_c_count, temperature_c_sum = coalesce(r.temperature_c_sum + excluded.temperature_c_sum, r.temperature_c_sum, excluded.temperature_c_sum), temperature_c_min = least(r.temperature_c_min, excluded.temperature_c_min), temperature_c_max = greatest(r.temperature_c_max, excluded.temperature_c_max), humidity_rh_sumsq = coalesce(r.humidity_rh_sumsq + excluded.humidity_rh_sumsq, r.humidity_rh_sumsq, excluded.humidity_rh_sumsq), humidity_rh_count = r.humidity_rh_count + excluded.humidity_rh_count, humidity_rh_sum = coalesce(r.humidity_rh_sum + excluded.humidity_rh_sum, r.humidity_rh_sum, excluded.humidity_rh_sum), humidity_rh_min = least(r.humidity_rh_min, excluded.humidity_rh_min), humidity_rh_max = greatest(r.humidity_rh_max, excluded.humidity_rh_max), pressure_hpa_sumsq = coalesce(r.pressure_hpa_sumsq + excluded.pressure_hpa_sumsq, r.pressure_hpa_sumsq, excluded.pressure_hpa_sumsq), pressure_hpa_count = r.pressure_hpa_count + excluded.pressure_hpa_count, pressure_hpa_sum = coalesce(r.pressure_hpa_sum + excluded.pressure_hpa_sum, r.pressure_hpa_sum, excluded.pressure_hpa_sum), pressure_hpa_min = least(r.pressure_hpa_min, excluded.pressure_hpa_min), pressure_hpa_max = greatest(r.pressure_hpa_max, excluded.pressure_hpa_max), pm1_0_sumsq = coalesce(r.pm1_0_sumsq + excluded.pm1_0_sumsq, r.pm1_0_sumsq, excluded.pm1_0_sumsq), pm1_0_count = r.pm1_0_count + excluded.pm1_0_count, pm1_0_sum = coalesce(r.pm1_0_sum + excluded.pm1_0_sum, r.pm1_0_sum, excluded.pm1_0_sum), pm1_0_min = least(r.pm1_0_min, excluded.pm1_0_min), pm1_0_max = greatest(r.pm1_0_max, excluded.pm1_0_max), pm2_5_sumsq = coalesce(r.pm2_5_sumsq + excluded.pm2_5_sumsq, r.pm2_5_sumsq, excluded.pm2_5_sumsq), pm2_5_count = r.pm2_5_count + excluded.pm2_5_count, pm2_5_sum = coalesce(r.pm2_5_sum + excluded.pm2_5_sum, r.pm2_5_sum, excluded.pm2_5_sum), pm2_5_min = least(r.pm2_5_min, excluded.pm2_5_min), pm2_5_max = greatest(r.pm2_5_max, excluded.pm2_5_max), pm10_sumsq = coalesce(r.pm10_sumsq + excluded.pm10_sumsq, r.pm10_sumsq, excluded.pm10_sumsq), pm10_count = r.pm10_count + excluded.pm10_count, pm10_sum = coalesce(r.pm10_sum + excluded.pm10_sum, r.pm10_sum, excluded.pm10_sum), pm10_min = least(r.pm10_min, excluded.pm10_min), pm10_max = greatest(r.pm10_max, excluded.pm10_max), co2_ppm_sumsq = coalesce(r.co2_ppm_sumsq + excluded.co2_ppm_sumsq, r.co2_ppm_sumsq, excluded.co2_ppm_sumsq), co2_ppm_count = r.co2_ppm_count + excluded.co2_ppm_count, co2_ppm_sum = coalesce(r.co2_ppm_sum + excluded.co2_ppm_sum, r.co2_ppm_sum, excluded.co2_ppm_sum), co2_ppm_min = least(r.co2_ppm_min, excluded.co2_ppm_min), co2_ppm_max = greatest(r.co2_ppm_max, excluded.co2_ppm_max), co_ppm_sumsq = coalesce(r.co_ppm_sumsq + excluded.co_ppm_sumsq, r.co_ppm_sumsq, excluded.co_ppm_sumsq), co_ppm_count = r.co_ppm_count + excluded.co_ppm_count, co_ppm_sum = coalesce(r.co_ppm_sum + excluded.co_ppm_sum, r.co_ppm_sum, excluded.co_ppm_sum), co_ppm_min = least(r.co_ppm_min, excluded.co_ppm_min), co_ppm_max = greatest(r.co_ppm_max, excluded.co_ppm_max), uv_index_sumsq = coalesce(r.uv_index_sumsq + excluded.uv_index_sumsq, r.uv_index_sumsq, excluded.uv_index_sumsq), uv_index_count = r.uv_index_count + excluded.uv_index_count, uv_index_sum = coalesce(r.uv_index_sum + excluded.uv_index_sum, r.uv_index_sum, excluded.uv_index_sum), uv_index_min = least(r.uv_index_min, excluded.uv_index_min), uv_index_max = greatest(r.uv_index_max, excluded.uv_index_max)), m as (insert into readings_monthly as r select station_id, date_trunc('month', bucket, 'UTC') as bucket, quality_flag, sum(n)::bigint as n, sum(temperature_c_count)::bigint as temperature_c_count, sum(temperature_c_sum) as temperature_c_sum, min(temperature_c_min) as temperature_c_min, max(temperature_c_max) as temperature_c_max, sum(temperature_c_sumsq) as temperature_c_sumsq, sum(humidity_rh_count)::bigint as humidity_rh_count, sum(humidity_rh_sum) as humidity_rh_sum, min(humidity_rh_min) as humidity_rh_min, max(humidity_rh_max) as humidity_rh_max, sum(humidity_rh_sumsq) as humidity_rh_sumsq, sum(pressure_hpa_count)::bigint as pressure_hpa_count, sum(pressure_hpa_sum) as pressure_hpa_sum, min(pressure_hpa_min) as pressure_hpa_min, max(pressure_hpa_max) as pressure_hpa_max, sum(pressure_hpa_sumsq) as pressure_hpa_sumsq, sum(pm1_0_count)::bigint as pm1_0_count, sum(pm1_0_sum) as pm1_0_sum, min(pm1_0_min) as pm1_0_min, max(pm1_0_max) as pm1_0_max, sum(pm1_0_sumsq) as pm1_0_sumsq, sum(pm2_5_count)::bigint as pm2_5_count, sum(pm2_5_sum) as pm2_5_sum, min(pm2_5_min) as pm2_5_min, max(pm2_5_max) as pm2_5_max, sum(pm2_5_sumsq) as pm2_5_sumsq, sum(pm10_count)::bigint as pm10_count, sum(pm10_sum) as pm10_sum, min(pm10_min) as pm10_min, max(pm10_max) as pm10_max, sum(pm10_sumsq) as pm10_sumsq, sum(co2_ppm_count)::bigint as co2_ppm_count, sum(co2_ppm_sum) as co2_ppm_sum, min(co2_ppm_min) as co2_ppm_min, max(co2_ppm_max) as co2_ppm_max, sum(co2_ppm_sumsq) as co2_ppm_sumsq, sum(co_ppm_count)::bigint as co_ppm_count, sum(co_ppm_sum) as co_ppm_sum, min(co_ppm_min) as co_ppm_min, max(co_ppm_max) as co_ppm_max, sum(co_ppm_sumsq) as co_ppm_sumsq, sum(uv_index_count)::bigint as uv_index_count, sum(uv_index_sum) as uv_index_sum, min(uv_index_min) as uv_index_min, max(uv_index_max) as uv_index_max, sum(uv_index_sumsq) as uv_index_sumsq from hourly group by 1, 2, 3 order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, temperature_c_sumsq = coalesce(r.temperature_c_sumsq + excluded.temperature_c_sumsq, r.temperature_c_sumsq, excluded.temperature_c_sumsq), temperature_c_count = r.temperature_c_count + excluded.temperature_c_count, temperature_c_sum = coalesce(r.temperature_c_sum + excluded.temperature_c_sum, r.temperature_c_sum, excluded.temperature_c_sum), temperature_c_min = least(r.temperature_c_min, excluded.temperature_c_min), temperature_c_max = greatest(r.temperature_c_max, excluded.temperature_c_max), humidity_rh_sumsq = coalesce(r.humidity_rh_sumsq + excluded.humidity_rh_sumsq, r.humidity_rh_sumsq, excluded.humidity_rh_sumsq), humidity_rh_count = r.humidity_rh_count + excluded.humidity_rh_count, humidity_rh_sum = coalesce(r.humidity_rh_sum + excluded.humidity_rh_sum, r.humidity_rh_sum, excluded.humidity_rh_sum), humidity_rh_min = least(r.humidity_rh_min, excluded.humidity_rh_min), humidity_rh_max = greatest(r.humidity_rh_max, excluded.humidity_rh_max), pressure_hpa_sumsq = coalesce(r.pressure_hpa_sumsq + excluded.pressure_hpa_sumsq, r.pressure_hpa_sumsq, excluded.pressure_hpa_sumsq), pressure_hpa_count = r.pressure_hpa_count + excluded.pressure_hpa_count, pressure_hpa_sum = coalesce(r.pressure_hpa_sum + excluded.pressure_hpa_sum, r.pressure_hpa_sum, excluded.pressure_hpa_sum), pressure_hpa_min = least(r.pressure_hpa_min, excluded.pressure_hpa_min), pressure_hpa_max = greatest(r.pressure_hpa_max, excluded.pressure_hpa_max), pm1_0_sumsq = coalesce(r.pm1_0_sumsq + excluded.pm1_0_sumsq, r.pm1_0_sumsq, excluded.pm1_0_sumsq), pm1_0_count = r.pm1_0_count + excluded.pm1_0_count, pm1_0_sum = coalesce(r.pm1_0_sum + excluded.pm1_0_sum, r.pm1_0_sum, excluded.pm1_0_sum), pm1_0_min = least(r.pm1_0_min, excluded.pm1_0_min), pm1_0_max = greatest(r.pm1_0_max, excluded.pm1_0_max), pm2_5_sumsq = coalesce(r.pm2_5_sumsq + excluded.pm2_5_sumsq, r.pm2_5_sumsq, excluded.pm2_5_sumsq), pm2_5_count = r.pm2_5_count + excluded.pm2_5_count, pm2_5_sum = coalesce(r.pm2_5_sum + excluded.pm2_5_sum, r.pm2_5_sum, excluded.pm2_5_sum), pm2_5_min = least(r.pm2_5_min, excluded.pm2_5_min), pm2_5_max = greatest(r.pm2_5_max, excluded.pm2_5_max), pm10_sumsq = coalesce(r.pm10_sumsq + excluded.pm10_sumsq, r.pm10_sumsq, excluded.pm10_sumsq), pm10_count = r.pm10_count + excluded.pm10_count, pm10_sum = coalesce(r.pm10_sum + excluded.pm10_sum, r.pm10_sum, excluded.pm10_sum), pm10_min = least(r.pm10_min, excluded.pm10_min), pm10_max = greatest(r.pm10_max, excluded.pm10_max), co2_ppm_sumsq = coalesce(r.co2_ppm_sumsq + excluded.co2_ppm_sumsq, r.co2_ppm_sumsq, excluded.co2_ppm_sumsq), co2_ppm_count = r.co2_ppm_count + excluded.co2_ppm_count, co2_ppm_sum = coalesce(r.co2_ppm_sum + excluded.co2_ppm_sum, r.co2_ppm_sum, excluded.co2_ppm_sum), co2_ppm_min = least(r.co2_ppm_min, excluded.co2_ppm_min), co2_ppm_max = greatest(r.co2_ppm_max, excluded.co2_ppm_max), co_ppm_sumsq = coalesce(r.co_ppm_sumsq + excluded.co_ppm_sumsq, r.co_ppm_sumsq, excluded.co_ppm_sumsq), co_ppm_count = r.co_ppm_count + excluded.co_ppm_count, co_ppm_sum = coalesce(r.co_ppm_sum + excluded.co_ppm_sum, r.co_ppm_sum, excluded.co_ppm_sum), co_ppm_min = least(r.co_ppm_min, excluded.co_ppm_min), co_ppm_max = greatest(r.co_ppm_max, excluded.co_ppm_max), uv_index_sumsq = coalesce(r.uv_index_sumsq + excluded.uv_index_sumsq, r.uv_index_sumsq, excluded.uv_index_sumsq), uv_index_count = r.uv_index_count + excluded.uv_index_count, uv_index_sum = coalesce(r.uv_index_sum + excluded.uv_index_sum, r.uv_index_sum, excluded.uv_index_sum), uv_index_min = least(r.uv_index_min, excluded.uv_index_min), uv_index_max = greatest(r.uv_index_max, excluded.uv_index_max)) insert into readings_hourly as r select * from hourly order by 1, 2, 3 on conflict (station_id, bucket, quality_flag) do update set n = r.n + excluded.n, temperature_c_sumsq = coalesce(r.temperature_c_sumsq + excluded.temperature_c_sumsq, r.temperature_c_sumsq, excluded.temperature_c_sumsq), temperature_c_count = r.temperature_c_count + excluded.temperature_c_count, temperature_c_sum = coalesce(r.temperature_c_sum + excluded.temperature_c_sum, r.temperature_c_sum, excluded.temperature_c_sum), temperature_c_min = least(r.temperature_c_min, excluded.temperature_c_min), temperature_c_max = greatest(r.temperature_c_max, excluded.temperature_c_max), humidity_rh_sumsq = coalesce(r.humidity_rh_sumsq + excluded.humidity_rh_sumsq, r.humidity_rh_sumsq, excluded.humidity_rh_sumsq), humidity_rh_count = r.humidity_rh_count + excluded.humidity_rh_count, humidity_rh_sum = coalesce(r.humidity_rh_sum + excluded.humidity_rh_sum, r.humidity_rh_sum, excluded.humidity_rh_sum), humidity_rh_min = least(r.humidity_rh_min, excluded.humidity_rh_min), humidity_rh_max = greatest(r.humidity_rh_max, excluded.humidity_rh_max), pressure_hpa_sumsq = coalesce(r.pressure_hpa_sumsq + excluded.pressure_hpa_sumsq, r.pressure_hpa_sumsq, excluded.pressure_hpa_sumsq), pressure_hpa_count = r.pressure_hpa_count + excluded.pressure_hpa_count, pressure_hpa_sum = coalesce(r.pressure_hpa_sum + excluded.pressure_hpa_sum, r.pressure_hpa_sum, excluded.pressure_hpa_sum), pressure_hpa_min = least(r.pressure_hpa_min, excluded.pressure_hpa_min), pressure_hpa_max = greatest(r.pressure_hpa_max, excluded.pressure_hpa_max), pm1_0_sumsq = coalesce(r.pm1_0_sumsq + excluded.pm1_0_sumsq, r.pm1_0_sumsq, excluded.pm1_0_sumsq), pm1_0_count = r.pm1_0_count + excluded.pm1_0_count, pm1_0_sum = coalesce(r.pm1_0_sum + excluded.pm1_0_sum, r.pm1_0_sum, excluded.pm1_0_sum), pm1_0_min = least(r.pm1_0_min, excluded.pm1_0_min), pm1_0_max = greatest(r.pm1_0_max, excluded.pm1_0_max), pm2_5_sumsq = coalesce(r.pm2_5_sumsq + excluded.pm2_5_sumsq, r.pm2_5_sumsq, excluded.pm2_5_sumsq), pm2_5_count = r.pm2_5_count + excluded.pm2_5_count, pm2_5_sum = coalesce(r.pm2_5_sum + excluded.pm2_5_sum, r.pm2_5_sum, excluded.pm2_5_sum), pm2_5_min = least(r.pm2_5_min, excluded.pm2_5_min), pm2_5_max = greatest(r.pm2_5_max, excluded.pm2_5_max), pm10_sumsq = coalesce(r.pm10_sumsq + excluded.pm10_sumsq, r.pm10_sumsq, excluded.pm10_sumsq), pm10_count = r.pm10_count + excluded.pm10_count, pm10_sum = coalesce(r.pm10_sum + excluded.pm10_sum, r.pm10_sum, excluded.pm10_sum), pm10_min = least(r.pm10_min, excluded.pm10_min), pm10_max = greatest(r.pm10_max, excluded.pm10_max), co2_ppm_sumsq = coalesce(r.co2_ppm_sumsq + excluded.co2_ppm_sumsq, r.co2_ppm_sumsq, excluded.co2_ppm_sumsq), co2_ppm_count = r.co2_ppm_count + excluded.co2_ppm_count, co2_ppm_sum = coalesce(r.co2_ppm_sum + excluded.co2_ppm_sum, r.co2_ppm_sum, excluded.co2_ppm_sum), co2_ppm_min = least(r.co2_ppm_min, excluded.co2_ppm_min), co2_ppm_max = greatest(r.co2_ppm_max, excluded.co2_ppm_max), co_ppm_sumsq = coalesce(r.co_ppm_sumsq + excluded.co_ppm_sumsq, r.co_ppm_sumsq, excluded.co_ppm_sumsq), co_ppm_count = r.co_ppm_count + excluded.co_ppm_count, co_ppm_sum = coalesce(r.co_ppm_sum + excluded.co_ppm_sum, r.co_ppm_sum, excluded.co_ppm_sum), co_ppm_min = least(r.co_ppm_min, excluded.co_ppm_min), co_ppm_max = greatest(r.co_ppm_max, excluded.co_ppm_max), uv_index_sumsq = coalesce(r.uv_index_sumsq + excluded.uv_index_sumsq, r.uv_index_sumsq, excluded.uv_index_sumsq), uv_index_count = r.uv_index_count + excluded.uv_index_count, uv_index_sum = coalesce(r.uv_index_sum + excluded.uv_index_sum, r.uv_index_sum, excluded.uv_index_sum), uv_index_min = least(r.uv_index_min, excluded.uv_index_min), uv_index_max = greatest(r.uv_index_max, excluded.uv_index_max); return null; end $function$

CREATE OR REPLACE FUNCTION public.envmon_rollups_rebuild()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  r record;
  touched_rows text := case tg_op
    when 'UPDATE' then 'select station_id, ts from old_rows union all select station_id, ts from new_rows'
    else 'select station_id, ts from old_rows' end;
  touched text;
begin
  for r in select * from envmon_rollup_units() loop
    touched := format('(select distinct station_id, date_trunc(%L, ts, ''UTC'') as bucket from (%s) t)', r.unit, touched_rows);
    execute format('delete from %I x using %s k where x.station_id = k.station_id and x.bucket = k.bucket',
      r.rollup, touched);
    execute format('insert into %I %s', r.rollup, envmon_rollup_select(r.unit, format(
      '(select readings.* from readings join %s k on readings.station_id = k.station_id '
      'and readings.ts >= k.bucket and readings.ts < ((k.bucket at time zone ''UTC'') + interval %L) at time zone ''UTC'') s',
      touched, '1 ' || r.unit)));
  end loop;
  return null;
end $function$

CREATE OR REPLACE FUNCTION public.envmon_sd(n numeric, total numeric, squares numeric)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case when n > 1 then
    sqrt(round(n * squares - total * total, greatest(scale(squares), 40)) / (n * (n - 1)))::double precision end $function$

CREATE OR REPLACE FUNCTION public.envmon_search_query(q text)
 RETURNS tsquery
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return websearch_to_tsquery('english', q);
exception when others then
  return plainto_tsquery('english', q);
end $function$

CREATE OR REPLACE FUNCTION public.envmon_settle_undecided_write()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if new.version <> old.version and new.settled_version = old.settled_version
     and coalesce(current_setting('envmon.settled_decided', true), '') <> 'on' then
    new.settled_version := nextval('station_data_version');
    new.settled_before := date_trunc('day', coalesce(new.ts, now()), 'UTC');
  end if;
  return new;
end $function$

CREATE OR REPLACE FUNCTION public.envmon_state_m2(double precision[])
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
AS $function$select $1[3]$function$

CREATE OR REPLACE FUNCTION public.envmon_station_interval_version()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if tg_op = 'INSERT' or new.interval_seconds is distinct from old.interval_seconds then
    insert into station_intervals (station_id, interval_seconds) values (new.station_id, new.interval_seconds);
  end if;
  return null;
end $function$

CREATE OR REPLACE FUNCTION public.envmon_words(text[])
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select coalesce(array_to_string($1, ' '), '')
$function$

-- aggregates

aggregate envmon_m2(double precision): state float8_accum, final envmon_state_m2, combine float8_combine

aggregate envmon_m2_merge(double precision[]): state float8_combine, final envmon_state_m2, combine float8_combine

aggregate envmon_sd_merge(double precision[]): state float8_combine, final float8_stddev_samp, combine float8_combine

-- sequences

sequence quality_overrides_id_seq

sequence reading_removals_id_seq

sequence rollup_backlog_id_seq

sequence station_data_version
