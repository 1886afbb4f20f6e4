#!/bin/sh
# Runs once, when the primary's data directory is created: a role for the standbys to stream with,
# allowed to connect for replication from the compose network.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
create role replicator with replication login password '${REPLICATION_PASSWORD}';
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
