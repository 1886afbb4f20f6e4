-- Months whose forced refresh (migration 0025) is still owed, written in the transaction that reads them
-- from readings_daily's invalidation log and removed in the one that refreshes them. Held in the
-- procedure's memory, such a month was lost to a refresh cut between the monthly level's refresh (which
-- consumes the month's range) and the forced one (a terminated backend, a killed server): no later
-- refresh saw the range again.
create table rollup_stranded_months (month_start timestamptz primary key);
