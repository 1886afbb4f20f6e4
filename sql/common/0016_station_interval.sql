-- How often a station reports: the aggregates' coverage tells how many readings a bucket holds against
-- how many this interval implies. One minute unless an operator says otherwise (envmon stations add
-- --interval-seconds); at most a day, since a bucket can be an hour.
alter table stations add column interval_seconds integer not null default 60
  check (interval_seconds between 1 and 86400);
