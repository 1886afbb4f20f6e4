-- Snapshots: a readings query with the instant it is read as of, under a persistent id (the query store
-- of citable data). The bytes are not kept: they are made again from the versioned readings on demand
-- and checked against the digests recorded here when the snapshot was made.
create table snapshots (
  id text primary key,
  -- The API path and its normalised parameters (as_of and output aside), as text in a canonical order.
  path text not null,
  query text not null,
  as_of timestamptz not null,
  created_at timestamptz not null default now(),
  -- What the bytes depend on beyond the readings, fixed when the snapshot was made: the CSV's comment
  -- lines, the Parquet key-value metadata, the station's interval for coverage.
  pinned jsonb not null,
  -- The digest of the answer's header and rows (no comment line): with the query, it names the snapshot.
  result_sha256 text not null,
  -- Per format: bytes, rows and SHA-256 of the file.
  files jsonb not null
);
create index snapshots_created_idx on snapshots (created_at);
