-- A snapshot's files, kept once made. In the database rather than on a disk of the instance or in an object
-- store: every instance and every replica serves them, and a backup of the database carries them with the
-- record whose digests they must match. Chunked, so that a file is written and sent a chunk at a time
-- and a byte range reads only the chunks it covers: chunk n holds the file's bytes from n MiB, each
-- chunk but the last exactly 1 MiB. Snapshots made before this have no chunks until their files are
-- first asked for.
create table snapshot_chunks (
  snapshot_id text not null references snapshots (id) on delete cascade,
  format text not null check (format in ('csv', 'parquet')),
  n integer not null check (n >= 0),
  bytes bytea not null,
  primary key (snapshot_id, format, n)
);
-- Kept as given, not compressed: a range within a chunk then reads only the part of it asked for, and the
-- store's size is the files' sizes, which its cap counts.
alter table snapshot_chunks alter column bytes set storage external;

-- The client address that asked for a snapshot, for its daily quota; null for snapshots made before.
alter table snapshots add column made_by text;
create index snapshots_made_by_idx on snapshots (made_by, created_at) where made_by is not null;

-- A snapshot asked for again as of the instant it names is found by it, without making its answer.
create index snapshots_as_of_idx on snapshots (as_of);
