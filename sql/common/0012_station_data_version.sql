-- A mark of each station's readings that changes with every write of the service (ingest, an override, a
-- deletion), in the writing transaction: a result computed from the station's readings at one mark is
-- still right while the mark stands, on any instance, so it can be kept and served again. Taken from a
-- sequence, so that no two states of a station ever share a mark, even once its row is deleted and made
-- again.
create sequence station_data_version;
alter table station_latest add column version bigint not null default nextval('station_data_version');
