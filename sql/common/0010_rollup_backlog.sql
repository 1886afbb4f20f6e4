-- Readings written below the rollups' horizon (a backfill) whose refresh has not finished yet: one row per
-- batch, written in the batch's transaction. Ingest answers once its readings are committed, without
-- waiting for the refresh; a read of the rollups that finds a row of its stations here first waits for
-- a refresh, so aggregates stay exact for every reader on every instance. A refresh deletes the rows it
-- saw before it started, once it has finished. The portable engine's rollups are exact in the writing
-- transaction: it never writes here.
create table rollup_backlog (
  id bigserial primary key,
  station_id text not null,
  first_ts timestamptz not null
);
create index rollup_backlog_station on rollup_backlog (station_id);
