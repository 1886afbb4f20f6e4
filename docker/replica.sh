#!/bin/sh
# A hot standby of the primary, by PostgreSQL's own streaming replication: the first start copies the
# primary with pg_basebackup (-R writes standby.signal and primary_conninfo), every start then streams.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_isready -h db -U replicator -q; do sleep 1; done
  PGPASSWORD="$REPLICATION_PASSWORD" pg_basebackup -h db -U replicator -D "$PGDATA" -X stream -c fast -R
  chmod 700 "$PGDATA"
fi
exec postgres -c hot_standby=on -c hot_standby_feedback=on
