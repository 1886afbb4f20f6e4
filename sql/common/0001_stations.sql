-- Field stations and their API keys.
create table stations (
  station_id text primary key
    check (station_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  name text not null check (name <> ''),
  location_name text not null default '',
  altitude_m double precision not null default 0,
  latitude double precision check (latitude between -90 and 90),
  longitude double precision check (longitude between -180 and 180),
  status text not null default 'active'
    check (status in ('active', 'offline', 'planned', 'maintenance')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Keys are stored only as SHA-256 hashes; key_id is the public handle shown by `envmon keys list`.
-- A station may hold several live keys at once so that a device can be rotated without a gap.
create table station_keys (
  key_id text primary key,
  station_id text not null references stations (station_id) on delete cascade,
  key_hash bytea not null unique,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

create index station_keys_station_id_idx on station_keys (station_id);
